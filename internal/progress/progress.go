// Package progress holds the state a long-running admin job (fsck, gc,
// dump, load) shares with the display that polls it: a phase, a count of
// items done and the total. It owns no output; the CLI draws it.
package progress

import "sync"

// Progress is a job's current phase and counts. It is safe for concurrent
// use: the job updates it, a display polls Snapshot. The zero value is
// ready to use.
type Progress struct {
	mu    sync.Mutex
	phase string
	done  int64
	total int64 // 0 if unknown
}

// Snapshot returns the current phase, the items done in it, and the total
// (0 if unknown).
func (p *Progress) Snapshot() (phase string, done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.phase, p.done, p.total
}

// Set starts a phase with done items of total.
func (p *Progress) Set(phase string, done, total int64) {
	p.mu.Lock()
	p.phase, p.done, p.total = phase, done, total
	p.mu.Unlock()
}

// Add counts n more items done.
func (p *Progress) Add(n int64) {
	p.mu.Lock()
	p.done += n
	p.mu.Unlock()
}
