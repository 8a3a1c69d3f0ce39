package opstat

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"shoal/internal/meta"
)

// Defaults of a Recorder.
const (
	// MinSlow is the least duration a slow operation has.
	MinSlow = 10 * time.Millisecond
	// Keep is how many slow operations a report lists.
	Keep = 10
	// Window is how long a slow operation stays listed.
	Window = 10 * time.Minute
)

// Recorder counts operations and keeps the slowest recent ones. The zero
// value is ready; all methods are safe for concurrent use.
type Recorder struct {
	ops   atomic.Uint64
	nanos atomic.Int64
	// floor is the duration an operation must reach to enter the slow
	// list: MinSlow, or the fastest kept while the list is full.
	floor atomic.Int64

	mu       sync.Mutex
	slow     []meta.SlowOp // slowest first
	lastAt   time.Time
	lastOps  uint64
	lastNano int64
}

// Observe records one operation of kind op on inode ino that took d.
func (r *Recorder) Observe(op string, ino uint64, d time.Duration) {
	r.ops.Add(1)
	r.nanos.Add(int64(d))
	if d < MinSlow || int64(d) <= r.floor.Load() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.insert(meta.SlowOp{Op: op, Ino: ino, Duration: d, At: time.Now()})
}

// insert adds s to the slow list, dropping the fastest beyond Keep.
func (r *Recorder) insert(s meta.SlowOp) {
	i, _ := slices.BinarySearchFunc(r.slow, s, func(a, b meta.SlowOp) int {
		return int(b.Duration - a.Duration) // descending
	})
	r.slow = slices.Insert(r.slow, i, s)
	if len(r.slow) > Keep {
		r.slow = r.slow[:Keep]
	}
	r.updateFloor()
}

// updateFloor raises the entry bar to the fastest kept when the list is
// full.
func (r *Recorder) updateFloor() {
	if len(r.slow) < Keep {
		r.floor.Store(0)
		return
	}
	r.floor.Store(int64(r.slow[len(r.slow)-1].Duration))
}

// Report returns the counters as of now: the total, the rate and mean
// latency since the previous Report (or since the first operation), and
// the slow operations of the last Window.
func (r *Recorder) Report(now time.Time) meta.SessionReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	ops, nanos := r.ops.Load(), r.nanos.Load()
	rep := meta.SessionReport{At: now, Ops: ops}
	if n := ops - r.lastOps; n > 0 {
		rep.AvgLatency = time.Duration((nanos - r.lastNano) / int64(n))
		if !r.lastAt.IsZero() && now.After(r.lastAt) {
			rep.OpsPerSec = float64(n) / now.Sub(r.lastAt).Seconds()
		}
	}
	r.lastAt, r.lastOps, r.lastNano = now, ops, nanos
	r.slow = slices.DeleteFunc(r.slow, func(s meta.SlowOp) bool { return now.Sub(s.At) > Window })
	r.updateFloor()
	rep.Slow = slices.Clone(r.slow)
	return rep
}
