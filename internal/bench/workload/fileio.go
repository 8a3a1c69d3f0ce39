package workload

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
)

// checkEvery is how many records a loop does between context checks.
const checkEvery = 256

// access is how a pass walks a file.
type access int

const (
	seqRead    access = iota // read(2) from offset 0 to the end
	seqWrite                 // write(2) from offset 0 to the end
	orderRead                // pread(2) of records in a given order
	orderWrite               // pwrite(2) of records in a given order
	orderMixed               // pread even positions of the order, pwrite odd ones
)

// pass is one walk over a file, record by record.
type pass struct {
	access access
	rec    int     // record size
	key    uint64  // pattern key written, or expected when reading
	order  []int64 // record numbers for order* access
	create bool    // create/truncate the file (writes only)
	fsync  bool    // fsync before close
	// timeClose includes close() in the phase time; otherwise the clock
	// stops before it (iozone's default; -c includes it).
	timeClose bool
}

// run performs the pass on path, of size bytes, verifying what it reads.
func (p pass) run(c *Client, m *Meter, path string, size int64) error {
	f, err := os.OpenFile(path, p.flags(), 0o644)
	if err != nil {
		return err
	}
	err = p.walk(c, m, f, size)
	if err == nil && p.fsync {
		err = f.Sync()
	}
	if !p.timeClose {
		m.StopClock()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && p.timeClose {
		m.StopClock()
	}
	return err
}

func (p pass) flags() int {
	switch p.access {
	case seqRead, orderRead:
		return os.O_RDONLY
	case orderMixed:
		return os.O_RDWR
	}
	if p.create {
		return os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	return os.O_WRONLY
}

func (p pass) walk(c *Client, m *Meter, f *os.File, size int64) error {
	buf := make([]byte, p.rec)
	if p.access == seqRead || p.access == seqWrite {
		return p.sequential(c, m, f, size, buf)
	}
	for i, r := range p.order {
		if i%checkEvery == 0 && c.Ctx.Err() != nil {
			return c.Ctx.Err()
		}
		off := r * int64(p.rec)
		n := int(min(int64(p.rec), size-off))
		write := p.access == orderWrite || (p.access == orderMixed && i%2 == 1)
		if err := p.record(c, m, f, off, buf[:n], write); err != nil {
			return err
		}
	}
	return nil
}

func (p pass) sequential(c *Client, m *Meter, f *os.File, size int64, buf []byte) error {
	for off, i := int64(0), 0; off < size; off, i = off+int64(p.rec), i+1 {
		if i%checkEvery == 0 && c.Ctx.Err() != nil {
			return c.Ctx.Err()
		}
		n := int(min(int64(p.rec), size-off))
		var err error
		if p.access == seqWrite {
			_, err = f.Write(c.Pool.Bytes(p.key, off, n))
		} else {
			err = readVerify(c, f, p.key, off, buf[:n], false)
		}
		if err != nil {
			return err
		}
		m.Add(int64(n), 1)
	}
	return nil
}

// record does one positional read (verified) or write of len(buf) bytes.
func (p pass) record(c *Client, m *Meter, f *os.File, off int64, buf []byte, write bool) error {
	var err error
	if write {
		_, err = f.WriteAt(c.Pool.Bytes(p.key, off, len(buf)), off)
	} else {
		err = readVerify(c, f, p.key, off, buf, true)
	}
	if err == nil {
		m.Add(int64(len(buf)), 1)
	}
	return err
}

// readVerify fills buf from f at off (with pread if positional, else from
// the current position) and checks it against stream key.
func readVerify(c *Client, f *os.File, key uint64, off int64, buf []byte, positional bool) error {
	var err error
	if positional {
		_, err = f.ReadAt(buf, off)
	} else {
		_, err = io.ReadFull(f, buf)
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("read %s at %d: file too short", f.Name(), off)
	}
	if err != nil {
		return err
	}
	if err := c.Pool.Verify(key, off, buf); err != nil {
		return fmt.Errorf("verify %s: %w", f.Name(), err)
	}
	return nil
}

// records returns the number of records of size rec in size bytes.
func records(size int64, rec int) int64 { return (size + int64(rec) - 1) / int64(rec) }

// reverseOrder returns n-1, ..., 1, 0.
func reverseOrder(n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = n - 1 - int64(i)
	}
	return out
}

// strideOrder visits every record once, jumping stride records each step
// and starting again one further on at the end (iozone's stride read).
func strideOrder(n, stride int64) []int64 {
	out := make([]int64, 0, n)
	for start := int64(0); start < stride && start < n; start++ {
		for r := start; r < n; r += stride {
			out = append(out, r)
		}
	}
	return out
}

// randomOrder returns a permutation of 0..n-1 drawn from r.
func randomOrder(n int64, r *rand.Rand) []int64 {
	out := make([]int64, n)
	for i, v := range r.Perm(int(n)) {
		out[i] = int64(v)
	}
	return out
}
