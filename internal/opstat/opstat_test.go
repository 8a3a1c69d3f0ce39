package opstat

import (
	"testing"
	"time"
)

var names = []string{"getattr", "read", "write", "fsync"}

const (
	opGetattr = iota
	opRead
	opWrite
	opFsync
)

// counter is a next observer that counts what reaches it.
type counter struct{ ops, read, written int }

func (c *counter) Op(int, time.Duration, bool) { c.ops++ }
func (c *counter) Read(n int)                  { c.read += n }
func (c *counter) Written(n int)               { c.written += n }

func TestSlowestKept(t *testing.T) {
	r := New(names, nil)
	// 30 slow requests in a shuffled order, and as many fast ones.
	for i := range 30 {
		r.Op(opWrite, MinSlow+time.Duration((i*7)%30)*time.Millisecond, false)
		r.Op(opGetattr, time.Microsecond, false)
	}
	rep := r.Report(time.Now())
	if rep.Ops != 60 {
		t.Fatalf("Ops = %d, want 60", rep.Ops)
	}
	if len(rep.Slow) != Keep {
		t.Fatalf("%d slow ops kept, want %d", len(rep.Slow), Keep)
	}
	for i, s := range rep.Slow {
		if want := MinSlow + time.Duration(29-i)*time.Millisecond; s.Duration != want || s.Op != "write" {
			t.Fatalf("slow[%d] = %v %s, want write %v: the slowest, slowest first", i, s.Duration, s.Op, want)
		}
	}
}

func TestFastNotKept(t *testing.T) {
	r := New(names, nil)
	r.Op(opGetattr, MinSlow-1, false)
	if rep := r.Report(time.Now()); len(rep.Slow) != 0 {
		t.Fatalf("a request under MinSlow was kept: %+v", rep.Slow)
	}
}

func TestRatesAndWindow(t *testing.T) {
	r := New(names, nil)
	t0 := time.Now()
	r.Report(t0)
	for range 10 {
		r.Op(opRead, 2*time.Millisecond, false)
		r.Read(1000)
	}
	r.Op(opFsync, time.Second, true)
	r.Written(4000)
	rep := r.Report(t0.Add(2 * time.Second))
	if rep.OpsPerSec != 5.5 || rep.ReadPerSec != 5000 || rep.WrittenPerSec != 2000 {
		t.Errorf("rates %v ops/s, %v B/s read, %v B/s written; want 5.5, 5000, 2000", rep.OpsPerSec, rep.ReadPerSec, rep.WrittenPerSec)
	}
	if want := (10*2*time.Millisecond + time.Second) / 11; rep.AvgLatency != want {
		t.Errorf("AvgLatency = %v, want %v", rep.AvgLatency, want)
	}
	if len(rep.Slow) != 1 || rep.Slow[0].Op != "fsync" || !rep.Slow[0].Failed {
		t.Fatalf("slow = %+v, want the failed 1 s fsync", rep.Slow)
	}
	rep = r.Report(time.Now().Add(Window + time.Minute))
	if len(rep.Slow) != 0 || rep.OpsPerSec != 0 || rep.AvgLatency != 0 || rep.ReadBytes != 10000 {
		t.Errorf("a quiet interval after the window: %+v; want no slow ops, no rate, the totals", rep)
	}
}

func TestPassesOn(t *testing.T) {
	var c counter
	r := New(names, &c)
	r.Op(opRead, time.Millisecond, false)
	r.Read(10)
	r.Written(20)
	if c != (counter{1, 10, 20}) {
		t.Fatalf("the next observer saw %+v", c)
	}
}

// BenchmarkOpFast is the cost every request pays.
func BenchmarkOpFast(b *testing.B) {
	r := New(names, nil)
	for range b.N {
		r.Op(opGetattr, time.Microsecond, false)
	}
}
