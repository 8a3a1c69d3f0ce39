package fsck

import "sync"

// Progress tells a display what a running check is doing. It is safe for
// concurrent use: fsck updates it, a display polls Snapshot.
type Progress struct {
	mu    sync.Mutex
	phase string
	done  int64
	total int64 // 0 if unknown
}

// Snapshot returns the current phase, the items done in it, and the total
// (0 if unknown). Phases: "checking metadata", "freed list", "scanning
// slices", "listing objects", "checking blocks" (bytes when verifying,
// blocks otherwise), "finding files", "zeroing", "done".
func (p *Progress) Snapshot() (phase string, done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.phase, p.done, p.total
}

func (p *Progress) set(phase string, done, total int64) {
	p.mu.Lock()
	p.phase, p.done, p.total = phase, done, total
	p.mu.Unlock()
}

func (p *Progress) add(n int64) {
	p.mu.Lock()
	p.done += n
	p.mu.Unlock()
}
