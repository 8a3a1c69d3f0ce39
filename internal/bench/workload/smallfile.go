package workload

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// fileSet is a set of small files spread over some subdirectories of a
// client directory, with the size of each. Used by the bonnie-style small
// file tests, mass creation and the huge directory.
type fileSet struct {
	c     *Client
	root  string   // directory holding the set, made by mkdirs
	dirs  []string // directories holding the files: root or its subdirectories
	names []string // file paths
	sizes []int64
	base  int // key base, to keep sets apart
}

// newFileSet names n files in ndirs subdirectories of dir (ndirs 0: dir
// itself), sized uniformly in [lo, hi].
func newFileSet(c *Client, dir string, n, ndirs int, lo, hi int64, base int, rng *rand.Rand) *fileSet {
	fs := &fileSet{c: c, root: dir, base: base}
	if ndirs <= 0 {
		fs.dirs = []string{dir}
	}
	for i := 0; i < ndirs; i++ {
		fs.dirs = append(fs.dirs, filepath.Join(dir, fmt.Sprintf("d%04d", i)))
	}
	fs.names = make([]string, n)
	fs.sizes = make([]int64, n)
	for i := range fs.names {
		fs.names[i] = filepath.Join(fs.dirs[i%len(fs.dirs)], fmt.Sprintf("%010d", i))
		fs.sizes[i] = lo
		if hi > lo {
			fs.sizes[i] = lo + rng.Int64N(hi-lo+1)
		}
	}
	return fs
}

// mkdirs creates the root directory and the subdirectories.
func (fs *fileSet) mkdirs() error {
	if err := os.Mkdir(fs.root, 0o755); err != nil {
		return err
	}
	for _, d := range fs.dirs {
		if d == fs.root {
			continue
		}
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// bytes returns the total size of the files.
func (fs *fileSet) bytes() int64 {
	var t int64
	for _, s := range fs.sizes {
		t += s
	}
	return t
}

// create creates file i with its content, written in chunks of up to
// 1 MiB.
func (fs *fileSet) create(m *Meter, i int) error {
	f, err := os.OpenFile(fs.names[i], os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	key := fs.c.Key(fs.base+i, 0)
	var werr error
	for off := int64(0); off < fs.sizes[i] && werr == nil; off += 1 << 20 {
		n := int(min(1<<20, fs.sizes[i]-off))
		_, werr = f.Write(fs.c.Pool.Bytes(key, off, n))
	}
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		m.Add(fs.sizes[i], 1)
	}
	return werr
}

// stat stats file i and checks its size.
func (fs *fileSet) stat(m *Meter, i int) error {
	st, err := os.Stat(fs.names[i])
	if err != nil {
		return err
	}
	if st.Size() != fs.sizes[i] {
		return fmt.Errorf("stat %s: size %d, want %d", fs.names[i], st.Size(), fs.sizes[i])
	}
	m.Add(0, 1)
	return nil
}

// read reads file i whole in blocks of blk bytes and verifies it.
func (fs *fileSet) read(m *Meter, i int, buf []byte) error {
	f, err := os.Open(fs.names[i])
	if err != nil {
		return err
	}
	defer f.Close()
	key := fs.c.Key(fs.base+i, 0)
	for off := int64(0); off < fs.sizes[i]; off += int64(len(buf)) {
		n := int(min(int64(len(buf)), fs.sizes[i]-off))
		if err := readVerify(fs.c, f, key, off, buf[:n], false); err != nil {
			return err
		}
	}
	m.Add(fs.sizes[i], 1)
	return nil
}

// rename renames file i to a new name in the same directory (its name
// with "r" appended), which its later operations use.
func (fs *fileSet) rename(m *Meter, i int) error {
	to := fs.names[i] + "r"
	if err := os.Rename(fs.names[i], to); err != nil {
		return err
	}
	fs.names[i] = to
	m.Add(0, 1)
	return nil
}

// remove unlinks file i.
func (fs *fileSet) remove(m *Meter, i int) error {
	if err := os.Remove(fs.names[i]); err != nil {
		return err
	}
	m.Add(0, 1)
	return nil
}

// each applies op to the files in order (nil: 0..n-1), checking the
// context every checkEvery files.
func (fs *fileSet) each(order []int64, op func(i int) error) error {
	n := len(fs.names)
	if order != nil {
		n = len(order)
	}
	for k := 0; k < n; k++ {
		if k%checkEvery == 0 && fs.c.Ctx.Err() != nil {
			return fs.c.Ctx.Err()
		}
		i := k
		if order != nil {
			i = int(order[k])
		}
		if err := op(i); err != nil {
			return err
		}
	}
	return nil
}

// rmdirs removes the subdirectories and the root, which must be empty.
func (fs *fileSet) rmdirs() error {
	for _, d := range fs.dirs {
		if d == fs.root {
			continue
		}
		if err := os.Remove(d); err != nil {
			return err
		}
	}
	return os.Remove(fs.root)
}
