package rediskv

import (
	"slices"
	"strings"
	"sync"
	"time"

	"shoal/internal/meta/kv"
)

// Seeds: the read round a write transaction need not make.
//
// A file-system operation usually reads, just before its transaction, the
// very keys the transaction reads first: the kernel looks a name up (the
// parent's attributes, the entry, the inode it names) and then creates,
// unlinks or renames it. Point reads here are checked by value at commit
// (tx.checks, commitScript), not by WATCH, so a write transaction may take
// those values from what this client read or wrote a moment before
// instead of reading them again: the commit script compares them with the
// stored ones and writes nothing if any differs (a conflict). The values
// are then never trusted without that comparison, and every transaction
// stays serializable whatever their age; a stale seed costs a retry,
// which reads afresh.
//
// Rules that keep it so, and keep retries rare:
//   - only a write transaction's first attempt seeds (not a View, which
//     commits nothing, and not a retry, which must make progress);
//   - only its first read round, and only if every key of that round has
//     a seed younger than seedAge, or a value in the client-side cache
//     (track.go: Redis would have invalidated it had it changed), or is
//     under a fresh prefix and unchanged since (fresh.go: a new entry in
//     a directory this client made, taken as absent), or is
//     one kvmeta says is almost always absent (kv.AbsentGuesser: a
//     slice's reference count, so that an unlink of a file with data
//     after the kernel's lookup reads nothing; a clone's counts are
//     guessed wrong, a conflict, and the retry reads): a round partly
//     seeded reads them all; a later round of the first attempt whose keys
//     are all guessed absent is not read either (tx.guess);
//     a later read round re-reads the seeds with its own keys (tx.read),
//     so fn sees one instant again from then on;
//   - a seeded transaction that ends without writes (an error such as
//     EEXIST, or nothing to change) still runs the commit script, to
//     validate what it was given before its outcome is believed;
//   - a conflict drops the seeds the transaction used.
//
// Seeds never answer a reader. The client-side cache does, but only
// reads that allow it (meta.Cached) and only with values Redis's
// invalidations prove current a fraction of a second ago (track.go).
type seedCache struct {
	mu sync.Mutex
	m  map[string]seed // by Redis key
}

// seed is one value as last read or written by this client.
type seed struct {
	value   []byte // nil: absent; never modified once stored
	present bool
	at      time.Time
}

const (
	// seedAge bounds how old a seed may be: older values are likely to
	// have changed (a conflict, which costs more than the read saved).
	seedAge = 500 * time.Millisecond
	// seedMax bounds the cache; it is cleared when full.
	seedMax = 1 << 14
)

// put records values (nil: absent) of rkeys, as read or written now. The
// values must not be modified afterwards.
func (c *seedCache) put(rkeys []string, values [][]byte, present []bool) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m)+len(rkeys) > seedMax {
		c.m = make(map[string]seed, len(rkeys))
	}
	for i, rk := range rkeys {
		c.m[rk] = seed{value: values[i], present: present[i], at: now}
	}
}

// get returns the seeds of all of rkeys, or false if one is missing or
// too old.
func (c *seedCache) get(rkeys []string) ([]seed, bool) {
	now := time.Now()
	out := make([]seed, len(rkeys))
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, rk := range rkeys {
		s, ok := c.young(rk, now)
		if !ok {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

// young returns rk's seed if it is younger than seedAge at now. The
// caller holds mu.
func (c *seedCache) young(rk string, now time.Time) (seed, bool) {
	s, ok := c.m[rk]
	return s, ok && now.Sub(s.at) < seedAge
}

// drop forgets rkeys.
func (c *seedCache) drop(rkeys []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rk := range rkeys {
		delete(c.m, rk)
	}
}

// seed is the first read round of a seedable transaction, from seeds:
// the values of rkeys if every one has a seed, which become checks. It is
// tried once per transaction.
func (t *tx) seed(rkeys []string) ([][]byte, bool) {
	if !t.trySeed(len(rkeys)) {
		return nil, false
	}
	ss, ok := t.seedsOf(rkeys)
	if !ok {
		return nil, false
	}
	return t.useSeeds(rkeys, ss), true
}

// guess is a read round of a seedable transaction's first attempt, any
// round, whose keys are all guessed absent (kv.AbsentGuesser): they
// become checks, as seeds do, and nothing is read. (kvmeta's unlink reads
// the slices' counts after the round of the entry, seeded.)
func (t *tx) guess(rkeys []string) ([][]byte, bool) {
	if !t.guessing || t.watching || t.token != "" || len(t.checks)+len(rkeys) > maxChecks {
		return nil, false
	}
	for _, rk := range rkeys {
		if !t.s.guessedAbsent(rk) {
			return nil, false
		}
	}
	return t.useSeeds(rkeys, make([]seed, len(rkeys))), true
}

// seedFollow is seed for PrefetchFollow: rkeys end with the key followed,
// and the key its value names needs a seed too.
func (t *tx) seedFollow(f kv.Follow, rkeys []string) bool {
	if !t.trySeed(len(rkeys) + 1) {
		return false
	}
	ss, ok := t.seedsOf(rkeys)
	if !ok {
		return false
	}
	if from := ss[len(ss)-1]; from.present && len(from.value) >= f.Off+f.Len {
		named := t.s.keys.value(append(append([]byte{}, f.Prefix...), from.value[f.Off:f.Off+f.Len]...))
		if !slices.Contains(rkeys, named) {
			ns, ok := t.seedsOf([]string{named})
			if !ok {
				return false
			}
			rkeys, ss = append(rkeys, named), append(ss, ns[0])
		}
	}
	t.useSeeds(rkeys, ss)
	return true
}

// seedsOf returns seeds for all of rkeys: those read or written lately,
// else the values the client-side cache holds (track.go), which Redis
// would have invalidated had they changed, whatever their age, else
// absent for a key kvmeta says is almost always absent (GuessAbsent: a
// slice's reference count, stored only above 1).
func (t *tx) seedsOf(rkeys []string) ([]seed, bool) {
	now := time.Now()
	ss := make([]seed, len(rkeys))
	for i, rk := range rkeys {
		t.s.seeds.mu.Lock()
		s, ok := t.s.seeds.young(rk, now)
		t.s.seeds.mu.Unlock()
		if !ok {
			if s, ok = t.s.track.seed(rk); !ok {
				if !t.s.guessedAbsent(rk) {
					return nil, false
				}
				s = seed{at: now}
			}
		}
		ss[i] = s
	}
	return ss, true
}

// guessedAbsent says whether rk is under a prefix GuessAbsent named.
func (s *Store) guessedAbsent(rk string) bool { return underAny(s.absent.Load(), rk) }

// underAny says whether rk begins with one of the prefixes *p (none if p
// is nil).
func underAny(p *[]string, rk string) bool {
	if p == nil {
		return false
	}
	for _, pre := range *p {
		if strings.HasPrefix(rk, pre) {
			return true
		}
	}
	return false
}

// trySeed says whether a read round of n keys may come from seeds: the
// transaction's first, with nothing WATCHed. Only one round is tried.
func (t *tx) trySeed(n int) bool {
	ok := t.seedable && len(t.checks) == 0 && !t.watching && t.token == "" && n <= maxChecks
	t.seedable = false
	return ok
}

// useSeeds takes ss as the values read of rkeys: checks, as a read's.
func (t *tx) useSeeds(rkeys []string, ss []seed) [][]byte {
	if t.read1 == nil {
		t.read1 = map[string][]byte{}
	}
	vals := make([][]byte, len(rkeys))
	for i, s := range ss {
		v := s.value
		if s.present && v == nil {
			v = []byte{}
		}
		vals[i] = v
		t.read1[rkeys[i]] = v
		t.checks = append(t.checks, check{rkey: rkeys[i], fp: fingerprint(s.value, s.present)})
	}
	t.seeded = append(t.seeded, rkeys...)
	return vals
}

// seedWrites records the writes of a committed transaction as seeds.
func (t *tx) seedWrites() {
	if len(t.writes) == 0 {
		return
	}
	rkeys := make([]string, 0, len(t.writes))
	vals := make([][]byte, 0, len(t.writes))
	present := make([]bool, 0, len(t.writes))
	for k, w := range t.writes {
		rkeys = append(rkeys, t.s.keys.value([]byte(k)))
		vals = append(vals, w.value)
		present = append(present, !w.deleted)
	}
	t.s.seeds.put(rkeys, vals, present)
}
