package rediskv

import (
	"cmp"
	"context"
	"slices"
	"time"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// Fresh prefixes: absent keys known without a read (kv.FreshPrefixer,
// kv.AbsentKnower).
//
// A transaction may name a 9-byte prefix under which no key exists
// before it commits (kvmeta: the entries of the directory it creates).
// With the client-side cache running, the tracker then keeps a record
// of the prefix: the keys under it that anyone changed since (unknown),
// learnt from Redis's invalidations, which name every key changed under
// a tracked prefix, read or not. The record is made before the commit is
// sent, so every change after the commit ran is in unknown once its
// invalidation arrives; it counts from when the commit returned (at). A
// key under the prefix that is not in unknown was then absent when the
// last answered ping's predecessor was sent (valid, track.go), if at is
// before valid: the cache's own rule, so a lookup of a name about to be
// created (the kernel's LOOKUP before CREATE) is answered ENOENT without
// a round trip, and reports valid as its instant (meta.Cached). This
// client's own writes under the prefix are put in unknown before they
// are sent. A write transaction's first read round takes such keys as
// absent seeds (seeds.go), which its commit compares anyway. A reset of
// the tracker forgets every record. A full table forgets the records
// used least lately (made, changed under, or asked about), down to
// three quarters of freshMax: a long-lived mount keeps serving the
// directories it works in after it has made and filled many others.
// Forgetting a record only loses knowledge: its keys are then read.

// freshRecord is the state of one fresh prefix.
type freshRecord struct {
	at      time.Time       // when its commit returned; zero while it runs
	unknown map[string]bool // Redis keys under the prefix changed since
	used    uint64          // tracker.freshUse when last made, changed or asked
}

// freshMax bounds the records and the keys they hold in unknown, all
// together; past it the records used least lately are forgotten.
var freshMax = 1 << 16

var _ kv.FreshPrefixer = (*tx)(nil)

// FreshPrefix implements kv.FreshPrefixer: the prefix's record is made
// when the transaction commits, if the cache runs.
func (t *tx) FreshPrefix(prefix []byte) {
	if len(prefix) == kv.ScanPrefixLen && !t.readOnly {
		t.fresh = append(t.fresh, t.s.keys.value(prefix))
	}
}

var _ kv.AbsentKnower = (*Store)(nil)

// KnownAbsent implements kv.AbsentKnower.
func (s *Store) KnownAbsent(ctx context.Context, key []byte) bool {
	c := meta.CachedOf(ctx)
	if c == nil || !s.track.ensure() {
		return false
	}
	at, ok := s.track.knownAbsent(s.keys.value(key))
	if ok {
		s.track.served.Add(1)
		c.Served(at)
	}
	return ok
}

// freshPrefix returns the Redis prefix of rk's record (its first 9 kv
// bytes), or "" if rk is too short to have one.
func (tr *tracker) freshPrefix(rk string) string {
	n := len(tr.s.keys.base) + 1 + kv.ScanPrefixLen
	if len(rk) < n {
		return ""
	}
	return rk[:n]
}

// freshBegin makes the records of prefixes (Redis keys of 9-byte kv
// prefixes), before the commit that makes them fresh is sent.
func (tr *tracker) freshBegin(prefixes []string) {
	if !tr.running.Load() {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.fresh == nil {
		tr.fresh = map[string]*freshRecord{}
	}
	if len(tr.fresh)+tr.freshKeys+len(prefixes) > freshMax {
		tr.freshEvict()
	}
	for _, p := range prefixes {
		if r := tr.fresh[p]; r != nil {
			tr.freshKeys -= len(r.unknown)
		}
		tr.freshUse++
		tr.fresh[p] = &freshRecord{unknown: map[string]bool{}, used: tr.freshUse}
	}
}

// freshEvict forgets the records used least lately until the records
// and their keys fill at most three quarters of freshMax. The caller
// holds mu.
func (tr *tracker) freshEvict() {
	type use struct {
		prefix string
		used   uint64
	}
	byUse := make([]use, 0, len(tr.fresh))
	for p, r := range tr.fresh {
		byUse = append(byUse, use{p, r.used})
	}
	slices.SortFunc(byUse, func(a, b use) int { return cmp.Compare(a.used, b.used) })
	for _, u := range byUse {
		if len(tr.fresh)+tr.freshKeys <= freshMax/4*3 {
			return
		}
		tr.freshKeys -= len(tr.fresh[u.prefix].unknown)
		delete(tr.fresh, u.prefix)
	}
}

// freshEnd starts the records of prefixes once their commit returned
// (ok), or forgets them (failed, or outcome unknown).
func (tr *tracker) freshEnd(prefixes []string, ok bool) {
	if !tr.running.Load() {
		return
	}
	now := time.Now()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, p := range prefixes {
		if r := tr.fresh[p]; r != nil {
			if ok && r.at.IsZero() {
				r.at = now
			} else if !ok {
				tr.freshKeys -= len(r.unknown)
				delete(tr.fresh, p)
			}
		}
	}
}

// freshChanged puts rkeys under a record in its unknown set. The caller
// holds mu.
func (tr *tracker) freshChanged(rkeys []string) {
	if len(tr.fresh) == 0 {
		return
	}
	for _, rk := range rkeys {
		if r := tr.fresh[tr.freshPrefix(rk)]; r != nil {
			tr.freshUse++
			r.used = tr.freshUse
			if !r.unknown[rk] {
				r.unknown[rk] = true
				tr.freshKeys++
			}
		}
	}
	if len(tr.fresh)+tr.freshKeys > freshMax {
		tr.freshEvict()
	}
}

// knownAbsent says whether rk is under a record that may be served (its
// commit returned before valid, itself younger than staleMax) and not
// changed since, and returns valid, the instant rk was known absent.
func (tr *tracker) knownAbsent(rk string) (time.Time, bool) {
	if !tr.running.Load() {
		return time.Time{}, false
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	v := tr.valid
	if v.IsZero() || time.Since(v) > staleMax {
		return time.Time{}, false
	}
	if at, ok := tr.freshAbsent(rk); !ok || !at.Before(v) {
		return time.Time{}, false
	}
	return v, true
}

// freshAbsent returns when the fresh record rk is under started, if its
// commit returned and rk is unchanged since. Called with tr.mu held.
func (tr *tracker) freshAbsent(rk string) (time.Time, bool) {
	r := tr.fresh[tr.freshPrefix(rk)]
	if r == nil || r.at.IsZero() || r.unknown[rk] {
		return time.Time{}, false
	}
	tr.freshUse++
	r.used = tr.freshUse
	return r.at, true
}
