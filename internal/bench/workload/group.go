package workload

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"shoal/internal/bench/pattern"
)

// Hooks are the runner's callbacks around phases. All are optional; they
// run with the group's lock held, once per phase.
type Hooks struct {
	// BeforePhase runs once per phase after every client has arrived and
	// before the clock starts. For a Cold phase it should drop the page
	// cache and return true if it did.
	BeforePhase func(p Phase) (cold bool)
	// AfterPhase runs once the last client has finished phase p, with the
	// phase's measure.
	AfterPhase func(p Phase, m Measure)
}

// Group runs the clients of one run in lock-step, phase by phase, and
// sums what they measured. Create it with NewGroup, add every client with
// NewClient before any of them starts, then run each client's workload in
// its own goroutine. Its methods are safe for concurrent use.
type Group struct {
	clients int
	hooks   Hooks

	mu       sync.Mutex
	cond     *sync.Cond
	arrived  int    // clients waiting at the barrier
	gen      uint64 // barrier generation
	finished int    // clients done with the current phase
	cur      Measure
	start    time.Time
	end      time.Time
	measures []Measure

	// Read by Progress without the lock.
	phase atomic.Pointer[Phase]
	done  atomic.Int64
	since atomic.Int64 // phase start, unix nanoseconds
}

// NewGroup returns a group for n clients.
func NewGroup(n int, hooks Hooks) *Group {
	g := &Group{clients: max(n, 1), hooks: hooks}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// NewClient returns client index of the group, working in dir, drawing its
// data from pool.
func (g *Group) NewClient(ctx context.Context, dir string, index int, pool *pattern.Pool) *Client {
	return &Client{Ctx: ctx, Dir: dir, Index: index, Pool: pool, g: g}
}

// Measures returns the measures of the phases completed so far, in order.
func (g *Group) Measures() []Measure {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Measure(nil), g.measures...)
}

// Progress reports the running phase, the work done in it so far by all
// clients, the work expected, and when it started. ok is false before the
// first phase.
func (g *Group) Progress() (p Phase, done, total int64, start time.Time, ok bool) {
	pp := g.phase.Load()
	if pp == nil {
		return Phase{}, 0, 0, time.Time{}, false
	}
	return *pp, g.done.Load(), pp.Total * int64(g.clients), time.Unix(0, g.since.Load()), true
}

// enter waits until all clients have arrived for phase p, then starts it.
func (g *Group) enter(p Phase) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.arrived++
	if g.arrived < g.clients {
		gen := g.gen
		for gen == g.gen {
			g.cond.Wait()
		}
		return
	}
	cold := false
	if g.hooks.BeforePhase != nil {
		cold = g.hooks.BeforePhase(p)
	}
	g.cur = Measure{Phase: p.Name, Unit: p.Unit, Cold: cold && p.Cold, Counts: map[string]int64{}}
	g.arrived, g.finished = 0, 0
	g.done.Store(0)
	g.phase.Store(&p)
	g.start = time.Now()
	g.end = g.start
	g.since.Store(g.start.UnixNano())
	g.gen++
	g.cond.Broadcast()
}

// leave adds one client's work to the running phase and closes the phase
// when it is the last client.
func (g *Group) leave(m *Meter, err error, index int) {
	end := time.Now()
	if stop := m.stopTime(); !stop.IsZero() {
		end = stop
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if end.After(g.end) {
		g.end = end
	}
	g.cur.Bytes += m.bytes.Load()
	g.cur.Ops += m.ops.Load()
	for k, v := range m.snapshotCounts() {
		g.cur.Counts[k] += v
	}
	if err != nil && g.cur.Err == nil {
		if g.clients > 1 {
			err = fmt.Errorf("client %d: %w", index, err)
		}
		g.cur.Err = err
	}
	g.finished++
	if g.finished == g.clients {
		g.cur.Elapsed = g.end.Sub(g.start)
		g.measures = append(g.measures, g.cur)
		if g.hooks.AfterPhase != nil {
			g.hooks.AfterPhase(*g.phase.Load(), g.cur)
		}
	}
}
