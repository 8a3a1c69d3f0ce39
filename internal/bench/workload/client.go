package workload

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"shoal/internal/bench/pattern"
)

// Client is one benchmark client: a goroutine working in its own
// directory. A Client is used by one goroutine; its Meter by many.
type Client struct {
	Ctx   context.Context
	Dir   string // private directory, exists and is empty at the start
	Index int    // 0-based client number in its group
	Pool  *pattern.Pool

	g        *Group
	err      error  // first failure
	errPhase string // phase of the first failure
}

// Err returns the client's first failure, or nil.
func (c *Client) Err() error { return c.err }

// Key returns the pattern key of file number file, generation gen, unique
// to this client.
func (c *Client) Key(file, gen int) uint64 {
	return uint64(c.Index)<<48 | uint64(gen&0xff)<<40 | uint64(file)&(1<<40-1)
}

// Phase runs fn as phase p of this client, after every client of the group
// has arrived. If the client failed earlier or its context is done, fn is
// skipped and the phase records why. fn reports its work through m.
func (c *Client) Phase(p Phase, fn func(m *Meter) error) {
	c.g.enter(p)
	m := &Meter{g: c.g}
	var err error
	switch {
	case c.err != nil:
		err = fmt.Errorf("skipped after %s failed: %w", c.errPhase, c.err)
	case c.Ctx.Err() != nil:
		err = c.Ctx.Err()
	default:
		err = fn(m)
		if err != nil {
			c.err, c.errPhase = err, p.Name
		}
	}
	c.g.leave(m, err, c.Index)
}

// Meter counts the work of one client in one phase. It is safe for
// concurrent use by the client's worker goroutines.
type Meter struct {
	g     *Group
	bytes atomic.Int64
	ops   atomic.Int64

	mu     sync.Mutex
	counts map[string]int64
	end    time.Time // latest StopClock, zero if never called
}

// Add records bytes moved and ops completed.
func (m *Meter) Add(bytes, ops int64) {
	m.bytes.Add(bytes)
	m.ops.Add(ops)
	if p := m.g.phase.Load(); p != nil && p.Unit == UnitMiBps {
		m.g.done.Add(bytes)
	} else {
		m.g.done.Add(ops)
	}
}

// StopClock marks now as the end of this client's timed work in the
// phase; work after it (say, a close() that is not to be timed) still runs
// inside the phase but is not counted. With several calls (one per worker)
// the latest wins. Without a call the phase ends when fn returns.
func (m *Meter) StopClock() {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if now.After(m.end) {
		m.end = now
	}
}

func (m *Meter) stopTime() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.end
}

// Count adds n to the workload-specific counter key.
func (m *Meter) Count(key string, n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts == nil {
		m.counts = map[string]int64{}
	}
	m.counts[key] += n
}

func (m *Meter) snapshotCounts() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int64, len(m.counts))
	for k, v := range m.counts {
		out[k] = v
	}
	return out
}

// Fail marks the client as failed in phase before it runs: all its phases
// are then skipped, and record err. The runner uses it when it cannot
// prepare the client's directory.
func (c *Client) Fail(phase string, err error) {
	if c.err == nil {
		c.err, c.errPhase = err, phase
	}
}
