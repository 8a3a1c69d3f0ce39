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

// Observer is what the FUSE adaptor tells of every request (it has the
// method set of fusefs.Observer, which opstat may not import).
type Observer interface {
	Op(op int, d time.Duration, failed bool)
	Read(n int)
	Written(n int)
}

// Recorder counts operations and bytes and keeps the slowest recent
// operations. All methods are safe for concurrent use.
type Recorder struct {
	names []string // operation names by number
	next  Observer // also told of every request (the metrics), or nil

	ops     atomic.Uint64
	nanos   atomic.Int64
	read    atomic.Uint64
	written atomic.Uint64
	// floor is the duration an operation must pass to enter the slow
	// list: 0 while it has room, else the fastest one kept.
	floor atomic.Int64

	mu   sync.Mutex
	slow []meta.SlowOp // slowest first
	last mark          // the totals at the previous Report
}

// mark is the totals at one Report, from which the next one's rates are
// computed.
type mark struct {
	at                 time.Time
	ops, read, written uint64
	nanos              int64
}

var _ Observer = (*Recorder)(nil)

// New returns a Recorder of operations named by names (indexed by the
// numbers Op receives) that passes every request on to next (nil: none).
func New(names []string, next Observer) *Recorder {
	return &Recorder{names: names, next: next}
}

// Op records one request of operation op that took d.
func (r *Recorder) Op(op int, d time.Duration, failed bool) {
	if r.next != nil {
		r.next.Op(op, d, failed)
	}
	r.ops.Add(1)
	r.nanos.Add(int64(d))
	if d < MinSlow || int64(d) <= r.floor.Load() {
		return
	}
	name := "op"
	if op >= 0 && op < len(r.names) {
		name = r.names[op]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.insert(meta.SlowOp{Op: name, Duration: d, At: time.Now(), Failed: failed})
}

// Read records n bytes returned by a read.
func (r *Recorder) Read(n int) {
	if r.next != nil {
		r.next.Read(n)
	}
	r.read.Add(uint64(n))
}

// Written records n bytes accepted by a write.
func (r *Recorder) Written(n int) {
	if r.next != nil {
		r.next.Written(n)
	}
	r.written.Add(uint64(n))
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

// Report returns the totals as of now, the rates and mean latency since
// the previous Report (no rates on the first), and the slow operations of
// the last Window.
func (r *Recorder) Report(now time.Time) meta.SessionReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := mark{at: now, ops: r.ops.Load(), read: r.read.Load(), written: r.written.Load(), nanos: r.nanos.Load()}
	rep := meta.SessionReport{At: now, Ops: cur.ops, ReadBytes: cur.read, WrittenBytes: cur.written}
	prev := r.last
	if n := cur.ops - prev.ops; n > 0 {
		rep.AvgLatency = time.Duration((cur.nanos - prev.nanos) / int64(n))
	}
	if !prev.at.IsZero() && now.After(prev.at) {
		secs := now.Sub(prev.at).Seconds()
		rep.OpsPerSec = float64(cur.ops-prev.ops) / secs
		rep.ReadPerSec = float64(cur.read-prev.read) / secs
		rep.WrittenPerSec = float64(cur.written-prev.written) / secs
	}
	r.last = cur
	r.slow = slices.DeleteFunc(r.slow, func(s meta.SlowOp) bool { return now.Sub(s.At) > Window })
	r.updateFloor()
	rep.Slow = slices.Clone(r.slow)
	return rep
}
