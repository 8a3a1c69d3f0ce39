package fusefs

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"shoal/internal/meta"
)

// Directory attributes from this mount's own changes.
//
// With default_permissions the kernel checks the caller's access to a
// directory before every create, unlink or rename in it, and a change in
// the directory made it drop the attributes it had: so each create of a
// file after the first starts with a GETATTR of the parent, which would
// cost an engine read of attributes the create before it had just written.
// The engine reports what a change wrote (meta.Written); dirAttrs keeps a
// directory's attributes from the change of this mount that committed
// last, and GETATTR answers from them for what is left of the attribute
// timeout counted from that change, as if the kernel had cached them
// then. Another mount's changes are thus seen as late as with any kernel
// cache (the attribute timeout); none with --strict (no timeout, no
// cache).
//
// Ordering: two changes of one directory running at once commit in one
// order and may reply in the other, so the attributes of the change that
// finished last need not be the newest. Each directory maps to a counter
// (one of a fixed set: two directories sharing one only cost misses),
// raised when a change of it finishes, and a global counter is raised by
// every other change that may touch a directory (setattr, xattrs). A
// change keeps the attributes it wrote only if no change of its
// directories, nor any other, finished while it ran: then every change
// this mount committed before it had finished before it started, and
// its commit is the latest; one still running commits later and raises
// the counter when it finishes, which retires the kept attributes. A kept
// entry is served only while both counters are as the change left them.
type dirAttrs struct {
	ttl    time.Duration // the attribute timeout; 0: keep nothing
	others atomic.Uint64 // changes that are not tracked per directory
	slots  [256]atomic.Uint64

	mu sync.Mutex
	m  map[meta.Ino]keptAttr
}

// keptAttr is a directory's attributes as a change of this mount
// committed them.
type keptAttr struct {
	a      meta.Attr
	at     time.Time // when the change started: the commit is later
	slot   uint64
	others uint64
}

const maxKeptDirs = 4096

func (d *dirAttrs) slot(ino meta.Ino) *atomic.Uint64 {
	return &d.slots[uint64(ino)*0x9E3779B97F4A7C15>>56]
}

// dirChange is one tracked change of the directories dirs.
type dirChange struct {
	d       *dirAttrs
	dirs    []meta.Ino
	start   []uint64
	others  uint64
	at      time.Time
	written meta.Written
}

// begin starts a change of the entries of dirs: the returned context
// collects what the engine wrote; end must follow.
func (d *dirAttrs) begin(c context.Context, dirs ...meta.Ino) (context.Context, *dirChange) {
	ch := &dirChange{d: d, dirs: dirs, start: make([]uint64, len(dirs)), at: time.Now()}
	ch.others = d.others.Load()
	for i, ino := range dirs {
		ch.start[i] = d.slot(ino).Load()
	}
	return meta.WithWritten(c, &ch.written), ch
}

// end finishes the change: it retires what was kept of every inode it
// named or wrote and, if ok and no other change finished meanwhile,
// keeps the attributes it wrote to its directories.
func (ch *dirChange) end(ok bool) {
	d := ch.d
	inos := append(ch.written.Inos(), ch.dirs...)
	raised := make(map[*atomic.Uint64]uint64, len(inos))
	now := make(map[*atomic.Uint64]uint64, len(inos))
	seen := make(map[meta.Ino]bool, len(inos))
	for _, ino := range inos {
		if seen[ino] {
			continue
		}
		seen[ino] = true
		s := d.slot(ino)
		raised[s]++
		now[s] = s.Add(1)
	}
	keep := ok && d.ttl > 0 && d.others.Load() == ch.others
	for i, ino := range ch.dirs {
		s := d.slot(ino)
		keep = keep && now[s] == ch.start[i]+raised[s]
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ino := range inos {
		delete(d.m, ino)
	}
	if !keep {
		return
	}
	for _, ino := range ch.dirs {
		a, ok := ch.written.Attr(ino)
		if !ok || a.Type != meta.TypeDir {
			continue
		}
		if d.m == nil || len(d.m) >= maxKeptDirs {
			d.m = make(map[meta.Ino]keptAttr)
		}
		s := d.slot(ino)
		d.m[ino] = keptAttr{a: a, at: ch.at, slot: now[s], others: ch.others}
	}
}

// changed records a change that may touch any directory's attributes
// and is not tracked per directory (setattr, xattrs): nothing kept
// before it is served again.
func (d *dirAttrs) changed() {
	d.others.Add(1)
	d.mu.Lock()
	clear(d.m)
	d.mu.Unlock()
}

// forget drops what is kept of ino: the kernel was just told attributes
// read from the engine, which may be newer.
func (d *dirAttrs) forget(ino meta.Ino) {
	d.mu.Lock()
	delete(d.m, ino)
	d.mu.Unlock()
}

// get returns ino's kept attributes and how much longer the kernel may
// cache them.
func (d *dirAttrs) get(ino meta.Ino) (meta.Attr, time.Duration, bool) {
	d.mu.Lock()
	k, ok := d.m[ino]
	d.mu.Unlock()
	if !ok {
		return meta.Attr{}, 0, false
	}
	left := d.ttl - time.Since(k.at)
	if left <= 0 || d.slot(ino).Load() != k.slot || d.others.Load() != k.others {
		return meta.Attr{}, 0, false
	}
	return k.a, left, true
}
