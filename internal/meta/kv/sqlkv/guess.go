package sqlkv

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"shoal/internal/meta/kv"
)

// Guessed reads (PostgreSQL). A read-write transaction that reads and then
// writes costs two round trips: BEGIN with the reads, then the writes with
// COMMIT. Most of a mount's writes, though, read keys whose values it
// knows: values it wrote itself or read a moment ago (a file's attributes
// at each append, a directory's at each create, the entry a lookup found
// missing). So the store remembers the last values it committed or read
// (guesses, bounded), and a Txn's Get, GetMany and GetManyFollow are
// answered from them, as long as the transaction has sent nothing yet;
// each such answer is recorded. The first statement the transaction does
// send (a read the guesses cannot answer, or the writes with COMMIT) is
// preceded, in the same pipeline and right after BEGIN, by the guard
// (pgGuard): one SELECT that reads every guessed key and fails, dividing
// by zero, unless each has the value guessed (or is absent as guessed).
// A failed guard stops the pipeline: nothing after it runs, COMMIT
// included, so the transaction did not commit; its guessed keys are
// forgotten and fn runs again at once without guesses. A miss costs about
// four round trips more than not guessing: the failed pipeline, the
// ROLLBACK, and, since pgx drops the statements of a failed batch from
// its cache, deallocating and preparing them again. Keys another client
// keeps changing
// (a directory several mounts create in) would miss every time, so a
// missed key is not guessed again for guessHoldoff, unless the store
// noted a newer value of it while the transaction that missed ran, or
// notes one from a transaction that began before the miss: then its own
// commit made the miss (a background compaction racing the
// appends of a file that fsyncs often, whose attributes every append
// changes), and the newer guess stays. Measured on the 2-core test
// machine, 600 appends of 4 KiB each followed by fsync(2) through a
// PostgreSQL mount: 245 of 314 reads of the file's attributes went to the
// server (a round trip of about 130 µs each) before, 12 of 340 after.
// The median fsync did not change (the read overlapped the pack's
// fdatasync, which the commit waits for anyway); appends that do not
// wait for a block save the round trip. A guard that passes has read, inside the SERIALIZABLE
// transaction and before any of its writes, exactly the values fn was
// given: the transaction is the one that would have read them, with the
// same predicate locks, so isolation and retries are unchanged. An append
// to a file this mount writes, or a create after the kernel's lookup of
// the missing name, is then one round trip: BEGIN, guard, writes, COMMIT.
// Keys kvmeta names almost always absent (kv.AbsentGuesser: slices'
// reference counts, stored only above 1) are guessed absent when there is
// no guess of them, so the unlink of a file with data after the kernel's
// lookup is one round trip too (a clone's counts miss once, then are held
// off like any missed key).
//
// fn must not act on a guess before the guard passed: a transaction whose
// fn fails (an error, kv.ErrConflict) while it holds guesses not yet
// checked is run again without guesses, so the error it returns comes
// from real reads. Views never guess.

// guessLimit bounds the guesses a store keeps; past it half are dropped.
// guessValueMax is the largest value kept (attributes and entries are
// far smaller; chunk lists and the like are not worth the memory).
// guessHoldoff is how long a key whose guess missed is not guessed.
const (
	guessLimit    = 1 << 16
	guessValueMax = 1 << 10
	guessHoldoff  = time.Second
)

// pgGuard checks guesses: arrays of keys, of values and of absent flags
// (a key guessed absent). It divides by zero (SQLSTATE 22012, which no
// other statement of the package can raise) unless every key has its
// guessed value. Each key is read by its primary key (index scans only:
// pgSettings), so its SERIALIZABLE predicate locks are those of a Get.
const pgGuard = "SELECT 1 / (SELECT (count(*) = 0)::int FROM unnest(?::bytea[], ?::bytea[], ?::bool[]) AS g(k, v, absent) " +
	"WHERE (SELECT s.v FROM shoal_kv s WHERE s.k = g.k) IS DISTINCT FROM (CASE WHEN g.absent THEN NULL ELSE g.v END))"

// errMissed is a transaction whose guesses were wrong (the guard failed)
// or not yet checked when fn failed: it is run again without guesses.
var errMissed = errors.New("sqlkv: guessed reads missed")

// guesses are the values a store last committed or read, by key; nil
// means absent. missed holds when keys last missed, for guessHoldoff.
type guesses struct {
	mu       sync.Mutex
	vals     map[string][]byte
	missed   map[string]time.Time
	prefixes [][]byte // only keys under these are guessed (kv.Cacher); nil: all
	// absent: keys under these, with no guess of their own, are guessed
	// absent (kv.AbsentGuesser), unless they missed lately.
	absent [][]byte
}

// worth says whether key is under a prefix worth guessing. The caller
// holds mu.
//
// kvmeta names attributes and entries: what its changes read first. Other
// keys are not guessed. Two guesses are not of one instant until the
// guard passed, and kvmeta keeps some state derived from what a
// transaction read beyond the transaction (its chunk cache, under the
// generation of the attributes read; filled today from Scans, which are
// never guessed): keeping guesses to the keys it names keeps any such
// state off them.
func (g *guesses) worth(key string) bool {
	if g.prefixes == nil {
		return true
	}
	for _, p := range g.prefixes {
		if strings.HasPrefix(key, string(p)) {
			return true
		}
	}
	return false
}

func newGuesses() *guesses {
	return &guesses{vals: map[string][]byte{}, missed: map[string]time.Time{}}
}

// get returns the guess for key, a copy.
func (g *guesses) get(key []byte) (v []byte, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	v, ok = g.vals[string(key)]
	if !ok {
		return nil, g.guessedAbsent(key)
	}
	if v != nil {
		v = append(make([]byte, 0, len(v)), v...)
	}
	return v, ok
}

// guessedAbsent says whether key, which has no guess, is taken as absent:
// it is under a prefix kvmeta named almost always absent (GuessAbsent: a
// slice's reference count, stored only above 1) and did not miss in the
// last guessHoldoff. The caller holds mu.
func (g *guesses) guessedAbsent(key []byte) bool {
	for _, p := range g.absent {
		if bytes.HasPrefix(key, p) {
			at, missed := g.missed[string(key)]
			return !missed || time.Since(at) >= guessHoldoff
		}
	}
	return false
}

// note records values (nil: absent), dropping half the guesses when full.
// A key held off is not recorded, unless it is one of own, the writes of
// a transaction that began before the miss that holds it off: that
// transaction's commit may be what the miss met (see forget), and its
// value is the key's as of a commit after the miss's guess.
func (g *guesses) note(vals map[string][]byte, own map[string]pendingWrite, began time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var now time.Time
	for k, v := range vals {
		if at, ok := g.missed[k]; ok {
			if now.IsZero() {
				now = time.Now()
			}
			if _, mine := own[k]; now.Sub(at) < guessHoldoff && !(mine && at.After(began)) {
				continue
			}
			delete(g.missed, k)
		}
		if len(v) > guessValueMax || !g.worth(k) {
			delete(g.vals, k)
			continue
		}
		if len(g.vals) >= guessLimit {
			n := len(g.vals) / 2
			for old := range g.vals { // map order: a random half
				if n == 0 {
					break
				}
				delete(g.vals, old)
				n--
			}
		}
		g.vals[k] = v
	}
}

// forget drops keys whose guesses missed (guarded: the values guessed),
// and holds them off; except a key whose guess this store has replaced
// since (a commit of its own, or a read, noted a newer value meanwhile):
// that newer value is what the guard found, the miss says nothing of
// other clients, and the guess stays.
func (g *guesses) forget(guarded map[string][]byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	if len(g.missed) >= guessLimit {
		for k, at := range g.missed {
			if now.Sub(at) >= guessHoldoff {
				delete(g.missed, k)
			}
		}
	}
	for k, guessed := range guarded {
		if v, ok := g.vals[k]; ok && ((v == nil) != (guessed == nil) || !bytes.Equal(v, guessed)) {
			continue
		}
		delete(g.vals, k)
		if len(g.missed) < guessLimit {
			g.missed[k] = now
		}
	}
}

// guessing says whether t may still answer reads from guesses: a guessing
// store's Txn that has sent nothing yet.
func (t *tx) guessing() bool { return t.guesses != nil && !t.real }

// guess answers a read of key without the database, if it can: from the
// transaction's own buffered writes, its earlier guesses, or the store's
// guesses (recorded for the guard).
func (t *tx) guess(key []byte) ([]byte, bool) {
	if w, ok := t.pending[string(key)]; ok {
		if w.deleted {
			return nil, true
		}
		return append([]byte{}, w.value...), true
	}
	if v, ok := t.guarded[string(key)]; ok {
		if v == nil {
			return nil, true
		}
		return append([]byte{}, v...), true
	}
	v, ok := t.guesses.get(key)
	if !ok {
		return nil, false
	}
	if t.guarded == nil {
		t.guarded = map[string][]byte{}
	}
	t.guarded[string(key)] = v
	if v == nil {
		return nil, true
	}
	return append([]byte{}, v...), true
}

// guessAll answers reads of keys from guesses, all or none.
func (t *tx) guessAll(keys [][]byte) ([][]byte, bool) {
	for _, k := range keys {
		if _, ok := t.pending[string(k)]; ok {
			continue
		}
		if _, ok := t.guarded[string(k)]; ok {
			continue
		}
		if _, ok := t.guesses.get(k); !ok {
			return nil, false
		}
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		v, ok := t.guess(k)
		if !ok { // dropped meanwhile by another transaction's miss
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

// queueGuard ends guessing: it queues the guard of the guesses made, if
// any, ahead of everything else the transaction sends.
func (t *tx) queueGuard() error {
	if t.guesses == nil || t.real {
		return nil
	}
	t.real = true
	if len(t.guarded) == 0 {
		return nil
	}
	keys := make([][]byte, 0, len(t.guarded))
	vals := make([][]byte, 0, len(t.guarded))
	absent := make([]bool, 0, len(t.guarded))
	for k, v := range t.guarded {
		keys = append(keys, []byte(k))
		if v == nil {
			v = []byte{}
		}
		vals = append(vals, v)
		absent = append(absent, t.guarded[k] == nil)
	}
	t.guardSent = true
	return t.c.exec(stmtGuard, keys, vals, absent)
}

// seen records a value read from the database (nil: absent), to be noted
// as a guess once the transaction commits.
func (t *tx) seen(key, v []byte) {
	if t.guesses == nil {
		return
	}
	if t.read == nil {
		t.read = map[string][]byte{}
	}
	t.read[string(key)] = v
}

// missed reports whether err is the guard's failure.
func missed(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "22012"
}

// settle ends a guessing transaction's attempt: after a commit (ok) it
// notes what the transaction read and wrote as the store's guesses; after
// a failure it returns errMissed when the failure came from guesses (the
// guard failed: they are forgotten; or fn failed before they were
// checked), nil otherwise.
func (t *tx) settle(ok bool, errs ...error) error {
	if t.guesses == nil {
		return nil
	}
	if ok {
		vals := t.read
		if vals == nil {
			vals = map[string][]byte{}
		}
		for k, v := range t.guarded {
			vals[k] = v
		}
		for k, w := range t.written {
			if w.deleted {
				vals[k] = nil
			} else {
				vals[k] = w.value
			}
		}
		t.guesses.note(vals, t.written, t.began)
		return nil
	}
	if !t.real && len(t.guarded) > 0 {
		return errMissed // fn failed on guesses never checked
	}
	if t.guardSent {
		for _, err := range errs {
			if missed(err) {
				t.guesses.forget(t.guarded)
				return errMissed
			}
		}
	}
	return nil
}

var _ kv.Tx = (*tx)(nil)
