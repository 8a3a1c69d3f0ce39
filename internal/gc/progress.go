package gc

import "sync"

// Progress tells a display what a running collection is doing. It is safe
// for concurrent use: gc updates it, a display polls Snapshot.
type Progress struct {
	mu    sync.Mutex
	phase string
	done  int64
	total int64 // 0 if unknown
}

// Snapshot returns the current phase, the items done in it, and the total
// (0 if unknown). Phases: "clock", "freed list", "scanning metadata",
// "listing objects", "checking missing", "confirming", "deleting",
// "deleting freed", "done".
func (p *Progress) Snapshot() (phase string, done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.phase, p.done, p.total
}

// set starts a phase.
func (p *Progress) set(phase string, done, total int64) {
	p.mu.Lock()
	p.phase, p.done, p.total = phase, done, total
	p.mu.Unlock()
}

// add counts n more items done.
func (p *Progress) add(n int64) {
	p.mu.Lock()
	p.done += n
	p.mu.Unlock()
}
