package workload

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// Bonnie is the bonnie-style workload (bonnie++ -f -s SIZE -n FILES:MAX:MIN:DIRS):
// block write, rewrite and block read of one file of FileSize bytes in
// chunks of Chunk bytes, then sequential and random create, stat and
// delete of Files small files. Like bonnie++, block write and rewrite end
// with a timed fsync. The per-character tests and the seek test of
// bonnie++ are not run (bonnie++ -f).
type Bonnie struct {
	FileSize int64
	Chunk    int
	Files    int
	FileMin  int64 // smallest small file (bonnie++ -n :MAX:MIN)
	FileMax  int64 // largest small file
	Dirs     int   // subdirectories for the small files; 0: one directory
	Seed     uint64
}

var _ Workload = (*Bonnie)(nil)

// Name implements Workload.
func (w *Bonnie) Name() string { return "bonnie" }

// Params implements Workload.
func (w *Bonnie) Params() []Param {
	return []Param{
		{"file size", Size(w.FileSize)}, {"chunk size", Size(int64(w.Chunk))},
		{"small files", fmt.Sprint(w.Files)},
		{"small file size", Size(w.FileMin) + " – " + Size(w.FileMax)},
		{"directories", fmt.Sprint(w.Dirs)},
	}
}

// Metrics implements Workload: MiB/s for the block phases, files/s for the
// others.
func (w *Bonnie) Metrics(ms []Measure) []Metric { return PerPhase(ms) }

// Run implements Workload.
func (w *Bonnie) Run(c *Client) {
	path := filepath.Join(c.Dir, "bonnie.dat")
	blk := pass{rec: w.Chunk, timeClose: true}
	c.Phase(Phase{Name: "block write", Unit: UnitMiBps, Total: w.FileSize}, func(m *Meter) error {
		p := blk
		p.access, p.create, p.key, p.fsync = seqWrite, true, c.Key(0, 0), true
		return p.run(c, m, path, w.FileSize)
	})
	c.Phase(Phase{Name: "rewrite", Unit: UnitMiBps, Total: w.FileSize}, func(m *Meter) error {
		return w.rewrite(c, m, path)
	})
	c.Phase(Phase{Name: "block read", Unit: UnitMiBps, Cold: true, Total: w.FileSize}, func(m *Meter) error {
		p := blk
		p.access, p.key = seqRead, c.Key(0, 1)
		return p.run(c, m, path, w.FileSize)
	})
	os.Remove(path)
	rng := rand.New(rand.NewPCG(w.Seed, uint64(c.Index)))
	w.smallFiles(c, "seq", nil, rng)
	w.smallFiles(c, "random", randomOrder(int64(w.Files), rng), rng)
}

// rewrite reads each chunk, checks it, and writes it back changed, the way
// bonnie++ does (read, dirty, seek back, write), then fsyncs.
func (w *Bonnie) rewrite(c *Client, m *Meter, path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	buf := make([]byte, w.Chunk)
	for off, i := int64(0), 0; off < w.FileSize && err == nil; off, i = off+int64(w.Chunk), i+1 {
		if i%checkEvery == 0 && c.Ctx.Err() != nil {
			err = c.Ctx.Err()
			break
		}
		n := int(min(int64(w.Chunk), w.FileSize-off))
		if err = readVerify(c, f, c.Key(0, 0), off, buf[:n], true); err == nil {
			_, err = f.WriteAt(c.Pool.Bytes(c.Key(0, 1), off, n), off)
		}
		if err == nil {
			m.Add(int64(n), 1)
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// smallFiles runs create, stat and delete of the small files, in name
// order (order nil) or in the given random order.
func (w *Bonnie) smallFiles(c *Client, kind string, order []int64, rng *rand.Rand) {
	dir := filepath.Join(c.Dir, "bonnie."+kind)
	fs := newFileSet(c, dir, w.Files, w.Dirs, w.FileMin, w.FileMax, 1<<20, rng)
	n := int64(w.Files)
	buf := make([]byte, 64<<10)
	c.Phase(Phase{Name: kind + " create", Unit: UnitOps, Total: n}, func(m *Meter) error {
		if err := fs.mkdirs(); err != nil {
			return err
		}
		return fs.each(order, func(i int) error { return fs.create(m, i) })
	})
	c.Phase(Phase{Name: kind + " stat", Unit: UnitOps, Total: n}, func(m *Meter) error {
		if order == nil {
			return w.statListed(fs, m, buf)
		}
		return fs.each(order, func(i int) error { return w.statRead(fs, m, i, buf) })
	})
	c.Phase(Phase{Name: kind + " delete", Unit: UnitOps, Total: n}, func(m *Meter) error {
		if err := fs.each(order, func(i int) error { return fs.remove(m, i) }); err != nil {
			return err
		}
		return fs.rmdirs()
	})
}

// statRead stats file i, and reads it when it has data (bonnie++'s "read"
// of small files).
func (w *Bonnie) statRead(fs *fileSet, m *Meter, i int, buf []byte) error {
	if fs.sizes[i] == 0 {
		return fs.stat(m, i)
	}
	return fs.read(m, i, buf)
}

// statListed lists each directory and stats its entries in readdir order.
func (w *Bonnie) statListed(fs *fileSet, m *Meter, buf []byte) error {
	seen := 0
	for _, d := range fs.dirs {
		names, err := readdirnames(d)
		if err != nil {
			return err
		}
		for _, name := range names {
			i, err := strconv.Atoi(name)
			if err != nil || i < 0 || i >= len(fs.names) {
				return fmt.Errorf("readdir %s: unexpected entry %q", d, name)
			}
			if err := w.statRead(fs, m, i, buf); err != nil {
				return err
			}
			seen++
		}
	}
	if seen != len(fs.names) {
		return fmt.Errorf("readdir: listed %d files, want %d", seen, len(fs.names))
	}
	return nil
}

// readdirnames lists dir in the file system's order.
func readdirnames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}
