package workload

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// PostMark is the PostMark-style workload: a pool of Files files with sizes
// in [SizeLow, SizeHigh], then Transactions transactions, each one read or
// append (ReadBias in 10 reads) and one create or delete (CreateBias in 10
// creates), then deletion of what is left. Files spread over Subdirs
// subdirectories (0: one directory). Reads read whole files in ReadBlock
// pieces and verify them; appends add a size drawn from the same range in
// WriteBlock pieces.
type PostMark struct {
	SizeLow, SizeHigh int64
	Files             int
	Transactions      int
	ReadBlock         int
	WriteBlock        int
	ReadBias          int // 0..10
	CreateBias        int // 0..10
	Subdirs           int
	Seed              uint64
}

var _ Workload = (*PostMark)(nil)

// Units of the PostMark figures.
const (
	UnitTx    = "tx/s"
	UnitFiles = "files/s"
)

// Name implements Workload.
func (w *PostMark) Name() string { return "postmark" }

// Params implements Workload.
func (w *PostMark) Params() []Param {
	return []Param{
		{"file size", Size(w.SizeLow) + " – " + Size(w.SizeHigh)},
		{"files", fmt.Sprint(w.Files)}, {"transactions", fmt.Sprint(w.Transactions)},
		{"read block", Size(int64(w.ReadBlock))}, {"write block", Size(int64(w.WriteBlock))},
		{"read/append bias", fmt.Sprint(w.ReadBias)}, {"create/delete bias", fmt.Sprint(w.CreateBias)},
		{"subdirectories", fmt.Sprint(w.Subdirs)},
	}
}

// Metrics implements Workload: PostMark's report, as rates. Like PostMark,
// the per-file and data rates are over the total time of the three phases;
// transactions/s is over the transaction phase.
func (w *PostMark) Metrics(ms []Measure) []Metric {
	if len(ms) != 3 {
		return nil
	}
	total := Measure{Phase: "total", Counts: map[string]int64{}}
	for _, m := range ms {
		total.Elapsed += m.Elapsed
		for k, v := range m.Counts {
			total.Counts[k] += v
		}
		if total.Err == nil {
			total.Err = m.Err
		}
	}
	tx := ms[1]
	tx.Ops = tx.Counts["tx"]
	return []Metric{
		rate(tx, "transactions", UnitTx, float64(tx.Counts["tx"])),
		CountRate(ms[0], "create alone", UnitFiles, "created"),
		CountRate(total, "files created", UnitFiles, "created"),
		CountRate(total, "files read", UnitFiles, "read"),
		CountRate(total, "files appended", UnitFiles, "appended"),
		CountRate(total, "files deleted", UnitFiles, "deleted"),
		CountRate(ms[2], "delete alone", UnitFiles, "deleted"),
		rate(total, "data read", UnitMiBps, float64(total.Counts["bytesRead"])/mib),
		rate(total, "data written", UnitMiBps, float64(total.Counts["bytesWritten"])/mib),
	}
}

// pmState is one client's PostMark file pool.
type pmState struct {
	w     *PostMark
	c     *Client
	rng   *rand.Rand
	dirs  []string
	next  int     // next file number
	live  []int   // live file numbers
	sizes []int64 // by file number
	buf   []byte
}

// Run implements Workload.
func (w *PostMark) Run(c *Client) {
	s := &pmState{w: w, c: c, rng: rand.New(rand.NewPCG(w.Seed, uint64(c.Index))), buf: make([]byte, w.ReadBlock)}
	s.dirs = []string{c.Dir}
	if w.Subdirs > 0 {
		s.dirs = nil
	}
	for i := 0; i < w.Subdirs; i++ {
		s.dirs = append(s.dirs, filepath.Join(c.Dir, fmt.Sprintf("s%d", i)))
	}
	c.Phase(Phase{Name: "create", Unit: UnitOps, Total: int64(w.Files)}, func(m *Meter) error {
		return s.createPool(m)
	})
	c.Phase(Phase{Name: "transactions", Unit: UnitOps, Total: int64(w.Transactions)}, func(m *Meter) error {
		return s.transactions(m)
	})
	c.Phase(Phase{Name: "delete", Unit: UnitOps, Total: int64(w.Files)}, func(m *Meter) error {
		return s.deleteAll(m)
	})
}

func (s *pmState) createPool(m *Meter) error {
	for _, d := range s.dirs {
		if d != s.c.Dir {
			if err := os.Mkdir(d, 0o755); err != nil {
				return err
			}
		}
	}
	for i := 0; i < s.w.Files; i++ {
		if i%checkEvery == 0 && s.c.Ctx.Err() != nil {
			return s.c.Ctx.Err()
		}
		if err := s.create(m); err != nil {
			return err
		}
		m.Add(0, 1)
	}
	return nil
}

func (s *pmState) transactions(m *Meter) error {
	for i := 0; i < s.w.Transactions; i++ {
		if i%checkEvery == 0 && s.c.Ctx.Err() != nil {
			return s.c.Ctx.Err()
		}
		if err := s.transaction(m); err != nil {
			return err
		}
		m.Count("tx", 1)
		m.Add(0, 1)
	}
	return nil
}

// transaction is one read-or-append and one create-or-delete.
func (s *pmState) transaction(m *Meter) error {
	if len(s.live) > 0 {
		f := s.live[s.rng.IntN(len(s.live))]
		var err error
		if s.rng.IntN(10) < s.w.ReadBias {
			err = s.read(m, f)
		} else {
			err = s.appendTo(m, f)
		}
		if err != nil {
			return err
		}
	}
	if s.rng.IntN(10) < s.w.CreateBias || len(s.live) == 0 {
		return s.create(m)
	}
	return s.remove(m, s.rng.IntN(len(s.live)))
}

func (s *pmState) deleteAll(m *Meter) error {
	for len(s.live) > 0 {
		if len(s.live)%checkEvery == 0 && s.c.Ctx.Err() != nil {
			return s.c.Ctx.Err()
		}
		if err := s.remove(m, len(s.live)-1); err != nil {
			return err
		}
		m.Add(0, 1)
	}
	for _, d := range s.dirs {
		if d != s.c.Dir {
			if err := os.Remove(d); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *pmState) path(f int) string {
	return filepath.Join(s.dirs[f%len(s.dirs)], fmt.Sprintf("pm%07d", f))
}

func (s *pmState) randSize() int64 {
	return s.w.SizeLow + s.rng.Int64N(s.w.SizeHigh-s.w.SizeLow+1)
}

// create makes a new file of random size.
func (s *pmState) create(m *Meter) error {
	f := s.next
	s.next++
	s.sizes = append(s.sizes, 0)
	fd, err := os.OpenFile(s.path(f), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	err = s.write(m, fd, f, s.randSize())
	if cerr := fd.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	s.live = append(s.live, f)
	m.Count("created", 1)
	return nil
}

// write appends n bytes of file f's stream at its end, in WriteBlock pieces.
func (s *pmState) write(m *Meter, fd *os.File, f int, n int64) error {
	key := s.c.Key(f, 0)
	for n > 0 {
		k := int(min(n, int64(s.w.WriteBlock)))
		if _, err := fd.Write(s.c.Pool.Bytes(key, s.sizes[f], k)); err != nil {
			return err
		}
		s.sizes[f] += int64(k)
		n -= int64(k)
		m.Count("bytesWritten", int64(k))
	}
	return nil
}

// read reads file f whole and verifies it.
func (s *pmState) read(m *Meter, f int) error {
	fd, err := os.Open(s.path(f))
	if err != nil {
		return err
	}
	defer fd.Close()
	for off := int64(0); off < s.sizes[f]; off += int64(s.w.ReadBlock) {
		n := int(min(int64(s.w.ReadBlock), s.sizes[f]-off))
		if err := readVerify(s.c, fd, s.c.Key(f, 0), off, s.buf[:n], false); err != nil {
			return err
		}
		m.Count("bytesRead", int64(n))
	}
	m.Count("read", 1)
	return nil
}

// appendTo appends a random amount to file f.
func (s *pmState) appendTo(m *Meter, f int) error {
	fd, err := os.OpenFile(s.path(f), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	err = s.write(m, fd, f, s.randSize())
	if cerr := fd.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		m.Count("appended", 1)
	}
	return err
}

// remove deletes the live file at position i of the live list.
func (s *pmState) remove(m *Meter, i int) error {
	f := s.live[i]
	if err := os.Remove(s.path(f)); err != nil {
		return err
	}
	s.live[i] = s.live[len(s.live)-1]
	s.live = s.live[:len(s.live)-1]
	m.Count("deleted", 1)
	return nil
}
