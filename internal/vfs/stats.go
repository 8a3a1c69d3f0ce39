package vfs

import "time"

// Stats are a mount's gauges at one moment, for status output and metrics
// (read when asked, never kept up to date on the hot path).
type Stats struct {
	OpenHandles       int // open file handles (one per open(2) the kernel passed on)
	OpenFiles         int // distinct inodes with open handles
	LockedFiles       int // open files a POSIX, OFD or flock lock was taken through since their open (an unlock keeps them; the last close drops them)
	CompactionBacklog int // chunks due for compaction: the one being compacted and those queued
	CleanerBacklog    int // freed slices the cleaner last saw waiting for deletion
	// HeartbeatAge is the time since the session's last renewal was sent;
	// -1 without a session (engines without sessions, or not begun).
	HeartbeatAge time.Duration
}

// Stats returns fs's gauges now.
func (fs *FS) Stats() Stats {
	fs.mu.Lock()
	s := Stats{OpenHandles: len(fs.handles), OpenFiles: len(fs.files)}
	fs.mu.Unlock()
	s.LockedFiles = len(fs.lockedInodes())
	s.CompactionBacklog = fs.compactor.backlog()
	s.CleanerBacklog = int(fs.cleaner.backlog.Load())
	s.HeartbeatAge = fs.fence.age(time.Now())
	return s
}

// backlog is the number of chunks due for compaction: queued, or being
// compacted (a chunk leaves pending when its compaction ends).
func (c *compactor) backlog() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// age is the time since the lease was last renewed at now; -1 without a
// session (or while a lost session is being replaced).
func (f *fence) age(now time.Time) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lease == 0 || f.renewed.IsZero() {
		return -1
	}
	return now.Sub(f.renewed)
}
