package workload

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// HugeDir is the huge-directory workload: Entries empty files in one
// directory, created, listed (cold: after dropping the page cache), stat'ed
// and deleted.
type HugeDir struct {
	Entries int
}

var _ Workload = (*HugeDir)(nil)

// Name implements Workload.
func (w *HugeDir) Name() string { return "hugedir" }

// Params implements Workload.
func (w *HugeDir) Params() []Param { return []Param{{"entries", fmt.Sprint(w.Entries)}} }

// Metrics implements Workload: entries/s per phase.
func (w *HugeDir) Metrics(ms []Measure) []Metric { return PerPhase(ms) }

// Run implements Workload.
func (w *HugeDir) Run(c *Client) {
	dir := filepath.Join(c.Dir, "huge")
	fs := newFileSet(c, dir, w.Entries, 0, 0, 0, 4<<20, nil)
	n := int64(w.Entries)
	c.Phase(Phase{Name: "create", Unit: UnitOps, Total: n}, func(m *Meter) error {
		if err := fs.mkdirs(); err != nil {
			return err
		}
		return fs.each(nil, func(i int) error { return fs.create(m, i) })
	})
	c.Phase(Phase{Name: "readdir", Unit: UnitOps, Total: n, Cold: true}, func(m *Meter) error {
		return w.list(c, m, dir)
	})
	c.Phase(Phase{Name: "stat", Unit: UnitOps, Total: n}, func(m *Meter) error {
		return fs.each(nil, func(i int) error { return fs.stat(m, i) })
	})
	c.Phase(Phase{Name: "delete", Unit: UnitOps, Total: n}, func(m *Meter) error {
		if err := fs.each(nil, func(i int) error { return fs.remove(m, i) }); err != nil {
			return err
		}
		return fs.rmdirs()
	})
}

// list reads the directory in batches and checks every entry appears
// exactly once and nothing else does.
func (w *HugeDir) list(c *Client, m *Meter, dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	seen := make([]bool, w.Entries)
	count := 0
	for {
		if c.Ctx.Err() != nil {
			return c.Ctx.Err()
		}
		names, err := f.Readdirnames(1024)
		for _, name := range names {
			i, perr := strconv.Atoi(name)
			if perr != nil || i < 0 || i >= w.Entries || seen[i] {
				return fmt.Errorf("readdir %s: unexpected or repeated entry %q", dir, name)
			}
			seen[i] = true
		}
		count += len(names)
		m.Add(0, int64(len(names)))
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if count != w.Entries {
		return fmt.Errorf("readdir %s: listed %d entries, want %d", dir, count, w.Entries)
	}
	return nil
}
