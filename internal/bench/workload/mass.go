package workload

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
)

// Mass is the mass-creation workload: Files empty files created, stat'ed,
// renamed (each to a new name in the same directory) and deleted in one
// directory, then Files files of random size in [SizeLow, SizeHigh]
// created, read back (verified) and deleted.
type Mass struct {
	Files             int
	SizeLow, SizeHigh int64
	Seed              uint64
}

var _ Workload = (*Mass)(nil)

// Name implements Workload.
func (w *Mass) Name() string { return "mass" }

// Params implements Workload.
func (w *Mass) Params() []Param {
	return []Param{{"files", fmt.Sprint(w.Files)}, {"sized files", Size(w.SizeLow) + " – " + Size(w.SizeHigh)}}
}

// Metrics implements Workload: files/s per phase, plus MiB/s of the sized
// files written and read.
func (w *Mass) Metrics(ms []Measure) []Metric {
	out := PerPhase(ms)
	for _, m := range ms {
		if m.Phase == "create sized" || m.Phase == "read sized" {
			out = append(out, Throughput(m, m.Phase+" data"))
		}
	}
	return out
}

// Run implements Workload.
func (w *Mass) Run(c *Client) {
	rng := rand.New(rand.NewPCG(w.Seed, uint64(c.Index)))
	empty := newFileSet(c, filepath.Join(c.Dir, "empty"), w.Files, 0, 0, 0, 2<<20, rng)
	sized := newFileSet(c, filepath.Join(c.Dir, "sized"), w.Files, 0, w.SizeLow, w.SizeHigh, 3<<20, rng)
	buf := make([]byte, 64<<10)
	for _, set := range []struct {
		name   string
		fs     *fileSet
		read   func(m *Meter, i int) error
		cold   bool
		rename bool
	}{
		{"empty", empty, func(m *Meter, i int) error { return empty.stat(m, i) }, false, true},
		{"sized", sized, func(m *Meter, i int) error { return sized.read(m, i, buf) }, true, false},
	} {
		n := int64(w.Files)
		verb := "stat "
		if set.cold {
			verb = "read "
		}
		c.Phase(Phase{Name: "create " + set.name, Unit: UnitOps, Total: n}, func(m *Meter) error {
			if err := set.fs.mkdirs(); err != nil {
				return err
			}
			return set.fs.each(nil, func(i int) error { return set.fs.create(m, i) })
		})
		c.Phase(Phase{Name: verb + set.name, Unit: UnitOps, Total: n, Cold: set.cold}, func(m *Meter) error {
			return set.fs.each(nil, func(i int) error { return set.read(m, i) })
		})
		if set.rename {
			c.Phase(Phase{Name: "rename " + set.name, Unit: UnitOps, Total: n}, func(m *Meter) error {
				return set.fs.each(nil, func(i int) error { return set.fs.rename(m, i) })
			})
		}
		c.Phase(Phase{Name: "delete " + set.name, Unit: UnitOps, Total: n}, func(m *Meter) error {
			if err := set.fs.each(nil, func(i int) error { return set.fs.remove(m, i) }); err != nil {
				return err
			}
			return set.fs.rmdirs()
		})
	}
}
