package opstat

import (
	"fmt"
	"testing"
	"time"
)

func TestSlowestKept(t *testing.T) {
	var r Recorder
	// 30 slow operations in a shuffled order, and many fast ones.
	for i := range 30 {
		d := MinSlow + time.Duration((i*7)%30)*time.Millisecond
		r.Observe(fmt.Sprint("op", (i*7)%30), uint64(i), d)
		r.Observe("fast", 1, time.Microsecond)
	}
	rep := r.Report(time.Now())
	if rep.Ops != 60 {
		t.Fatalf("Ops = %d, want 60", rep.Ops)
	}
	if len(rep.Slow) != Keep {
		t.Fatalf("%d slow ops kept, want %d", len(rep.Slow), Keep)
	}
	for i, s := range rep.Slow {
		if want := MinSlow + time.Duration(29-i)*time.Millisecond; s.Duration != want {
			t.Fatalf("slow[%d] = %v (%s), want %v: the slowest, slowest first", i, s.Duration, s.Op, want)
		}
	}
}

func TestFastNotKept(t *testing.T) {
	var r Recorder
	r.Observe("getattr", 1, MinSlow-1)
	if rep := r.Report(time.Now()); len(rep.Slow) != 0 {
		t.Fatalf("an operation under MinSlow was kept: %+v", rep.Slow)
	}
}

func TestRateAndWindow(t *testing.T) {
	var r Recorder
	t0 := time.Now()
	r.Report(t0)
	for range 10 {
		r.Observe("read", 1, 2*time.Millisecond)
	}
	r.Observe("write", 2, time.Second)
	rep := r.Report(t0.Add(2 * time.Second))
	if rep.OpsPerSec != 5.5 {
		t.Errorf("OpsPerSec = %v, want 5.5 (11 ops in 2 s)", rep.OpsPerSec)
	}
	if want := (10*2*time.Millisecond + time.Second) / 11; rep.AvgLatency != want {
		t.Errorf("AvgLatency = %v, want %v", rep.AvgLatency, want)
	}
	if len(rep.Slow) != 1 {
		t.Fatalf("slow = %+v, want the 1 s write", rep.Slow)
	}
	if rep = r.Report(time.Now().Add(Window + time.Minute)); len(rep.Slow) != 0 || rep.OpsPerSec != 0 {
		t.Errorf("after the window: slow %+v, rate %v; want none and 0", rep.Slow, rep.OpsPerSec)
	}
}

// BenchmarkObserveFast is the cost every operation pays.
func BenchmarkObserveFast(b *testing.B) {
	var r Recorder
	for range b.N {
		r.Observe("getattr", 1, time.Microsecond)
	}
}
