// Package kv is the narrow transactional seam under Shoal's metadata engine:
// an ordered key-value store with serializable transactions. The engine in
// package kvmeta implements every file-system operation once, over this
// seam; SQLite, PostgreSQL and Redis each implement only Store and Tx.
//
// Why a KV seam rather than one engine per database: the POSIX rules
// (rename legality, nlink, sticky bit, orphans, slice reference counts) are
// the hard part, and writing them once per engine is how peers ended up with
// three diverging renames. A backend here is a few hundred lines.
//
// Keys are byte strings ordered bytewise. Scans are by prefix; backends may
// require a scanned prefix to be at least ScanPrefixLen bytes for ordered,
// paged scans (shorter prefixes are for admin scans and may be unordered).
package kv

import (
	"context"
	"errors"
	"time"
)

// ScanPrefixLen is the prefix length of ordered, paged scans: a one-byte
// key kind plus an 8-byte inode number.
const ScanPrefixLen = 9

// ErrConflict is returned by a Tx operation or commit when the transaction
// collided with another; Store.Txn retries the whole function on it.
var ErrConflict = errors.New("kv: transaction conflict")

// Store is a transactional ordered key-value store.
type Store interface {
	// Txn runs fn in a serializable read-write transaction and commits it.
	// If fn returns an error, nothing is written and Txn returns it. On a
	// conflict (ErrConflict, a serialization failure, a busy database) fn
	// runs again from scratch, with backoff, a bounded number of times; if
	// the backend stays unreachable past its retry bound, Txn returns an
	// error wrapping meta.ErrUnavailable. fn must not keep tx after it
	// returns and must have no side effects besides tx. What fn reads is
	// known committed only once Txn returned nil: a store may run several
	// Txns' fns one after another in one transaction (SQLite's group
	// commit), each seeing the writes of those before it, which a failed
	// commit then undoes (every fn runs again).
	Txn(ctx context.Context, fn func(tx Tx) error) error
	// View runs fn in a read-only transaction that sees one consistent
	// snapshot. Writes through tx inside View are an error.
	View(ctx context.Context, fn func(tx Tx) error) error
	// Name names the backend and location for logs, without secrets.
	Name() string
	// Close releases connections. Calls after Close fail.
	Close() error
}

// Tx is a transaction. Reads see the transaction's own writes. Tx is not
// safe for concurrent use. Write errors are kept and returned from the
// transaction (and from later calls), so callers need not check each Set.
type Tx interface {
	// Get returns the value of key, or nil if absent. The returned slice
	// belongs to the caller.
	Get(key []byte) ([]byte, error)
	// Set stores value under key.
	Set(key, value []byte)
	// Delete removes key; absent keys are fine.
	Delete(key []byte)
	// Scan calls fn for keys that start with prefix and sort after
	// prefix+after (after nil or empty: from the first), in key order, at
	// most limit of them (limit <= 0: all), until fn returns false.
	Scan(prefix, after []byte, limit int, fn func(key, value []byte) bool) error
}

// MultiGetter is implemented by transactions that read many keys in one
// round trip. It is optional: GetMany falls back to one Get per key.
type MultiGetter interface {
	// GetMany returns the values of keys, in order, nil where absent.
	GetMany(keys [][]byte) ([][]byte, error)
}

// GetMany reads keys through tx, in one round trip where tx supports it.
func GetMany(tx Tx, keys [][]byte) ([][]byte, error) {
	if m, ok := tx.(MultiGetter); ok {
		return m.GetMany(keys)
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := tx.Get(k)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// Prefetcher is implemented by transactions for which reading keys one by
// one costs a round trip each (a network store, Redis): Prefetch reads
// keys in one round trip and keeps their values for the transaction's
// later Gets. Callers prefetch the keys they know they will read next,
// independent of each other. It is optional: elsewhere Prefetch does
// nothing, and the Gets read as usual.
type Prefetcher interface {
	Prefetch(keys ...[]byte) error
}

// Prefetch reads keys ahead through tx where it is a Prefetcher.
func Prefetch(tx Tx, keys ...[]byte) error {
	if p, ok := tx.(Prefetcher); ok {
		return p.Prefetch(keys...)
	}
	return nil
}

// Follow names a key made from another key's value: Prefix and then the
// bytes [Off, Off+Len) of the value of From (kvmeta: a directory entry's
// value begins with the child's inode number, which names the child's
// attributes).
type Follow struct {
	From     []byte
	Prefix   []byte
	Off, Len int
}

// FollowPrefetcher is implemented by Prefetchers that can read, in the
// same round trip as keys and From, the key that From's value names (a
// lookup's entry and the child's attributes together). A From that is
// absent or too short names nothing. It is optional: PrefetchFollow falls
// back to Prefetch of keys and From.
type FollowPrefetcher interface {
	PrefetchFollow(f Follow, keys ...[]byte) error
}

// PrefetchFollow reads keys, f.From and the key f.From's value names ahead
// through tx, where tx can.
func PrefetchFollow(tx Tx, f Follow, keys ...[]byte) error {
	if p, ok := tx.(FollowPrefetcher); ok {
		return p.PrefetchFollow(f, keys...)
	}
	return Prefetch(tx, append(keys, f.From)...)
}

// ScanAhead names a Scan to read ahead (ScanPrefetcher): up to Limit keys
// of Prefix after After, as Scan takes them, and, when FollowLen > 0, for
// each value, the key FollowPrefix plus the value's bytes [FollowOff,
// FollowOff+FollowLen) (kvmeta: a directory entry's child's attributes).
// A value too short names nothing.
type ScanAhead struct {
	Prefix, After        []byte
	Limit                int
	FollowPrefix         []byte
	FollowOff, FollowLen int
}

// ScanPrefetcher is implemented by Prefetchers that can read, in the
// round trip of keys, the first page of a Scan and the keys its values
// name, all as of one instant: a later Scan of the same Prefix and After
// starts with that page, and Gets of the keys read are answered from it.
// It is optional: PrefetchScan falls back to Prefetch of keys, and the
// Scan and Gets then read as usual.
type ScanPrefetcher interface {
	PrefetchScan(s ScanAhead, keys ...[]byte) error
}

// PrefetchScan reads keys and the page s names ahead through tx, where tx
// can.
func PrefetchScan(tx Tx, s ScanAhead, keys ...[]byte) error {
	if p, ok := tx.(ScanPrefetcher); ok {
		return p.PrefetchScan(s, keys...)
	}
	return Prefetch(tx, keys...)
}

// Cacher is implemented by stores that keep values on the client. CacheKeys
// names the keys worth keeping, by prefix (kvmeta: an inode's attributes
// and directory entries, what its lookups and getattrs read and its
// changes read first). A store whose server invalidates what it keeps
// (Redis's client-side caching), or that can tell that nothing changed
// (SQLite's WAL index counts commits), answers reads whose context
// carries a meta.Cached from there, only with values known current a
// fraction of a second ago, and reports their age there (SQLite's are
// current at the instant of the answer, so it answers any point read);
// one that only guesses (PostgreSQL: a write transaction's reads,
// checked before it commits) guesses only these keys and never answers
// a reader. It is optional.
type Cacher interface {
	CacheKeys(prefixes ...[]byte)
	// CachedReads counts the reads answered from the cache so far.
	CachedReads() int64
}

// CacheKeys tells s which keys to keep on the client, where s can.
func CacheKeys(s Store, prefixes ...[]byte) {
	if c, ok := s.(Cacher); ok {
		c.CacheKeys(prefixes...)
	}
}

// CachedReads returns how many reads s answered from its client-side
// cache: 0 for a store without one.
func CachedReads(s Store) int64 {
	if c, ok := s.(Cacher); ok {
		return c.CachedReads()
	}
	return 0
}

// AbsentGuesser is implemented by stores whose write transactions may
// take values without reading them, because every value taken is
// compared with the stored one before anything is written (Redis's
// seeds: a stale value is a conflict, and the retry reads). GuessAbsent
// names keys, by prefix, that are almost always absent: with nothing
// better known, such a key is taken as absent. A wrong guess costs the
// transaction one attempt, never its correctness. It is optional.
type AbsentGuesser interface {
	GuessAbsent(prefixes ...[]byte)
}

// GuessAbsent tells s which keys are almost always absent, where s can
// use it.
func GuessAbsent(s Store, prefixes ...[]byte) {
	if g, ok := s.(AbsentGuesser); ok {
		g.GuessAbsent(prefixes...)
	}
}

// FreshPrefixer is implemented by transactions that can use knowing a
// prefix under which no key exists before they commit (kvmeta: a new
// directory's entries; inode numbers are never reused). A store that
// keeps values on the client and is told of every change to them
// (Redis's client-side cache, SQLite's) then knows, from the commit on, that every
// key under the prefix is absent but those changed since, and may say so
// (AbsentKnower). It is optional.
type FreshPrefixer interface {
	FreshPrefix(prefix []byte)
}

// FreshPrefix tells tx that no key under prefix exists before it
// commits, where tx can use it.
func FreshPrefix(tx Tx, prefix []byte) {
	if f, ok := tx.(FreshPrefixer); ok {
		f.FreshPrefix(prefix)
	}
}

// AbsentKnower is implemented by stores that can tell, without a round
// trip, that a key is absent: with Cacher's rules (Redis: only for a
// read whose context carries a meta.Cached, an answer known current a
// fraction of a second ago, whose instant is reported there; SQLite: any
// read, the answer being current). It is optional.
type AbsentKnower interface {
	KnownAbsent(ctx context.Context, key []byte) bool
}

// KnownAbsent says whether s knows key absent without reading it
// (AbsentKnower); false for a store that cannot tell.
func KnownAbsent(ctx context.Context, s Store, key []byte) bool {
	if k, ok := s.(AbsentKnower); ok {
		return k.KnownAbsent(ctx, key)
	}
	return false
}

// PointReader is implemented by stores that read one key cheaper outside
// an explicit transaction: one statement instead of BEGIN, SELECT and
// COMMIT (three cgo calls for SQLite; two round trips for PostgreSQL,
// which sends BEGIN with the SELECT).
// A single read is its own consistent snapshot. It is optional: GetOne
// falls back to a View.
type PointReader interface {
	// GetOne returns the committed value of key, or nil if absent, with
	// View's retry rules.
	GetOne(ctx context.Context, key []byte) ([]byte, error)
}

// GetOne reads one key from s: through its PointReader where it has one,
// else in a View.
func GetOne(ctx context.Context, s Store, key []byte) ([]byte, error) {
	if p, ok := s.(PointReader); ok {
		return p.GetOne(ctx, key)
	}
	var v []byte
	err := s.View(ctx, func(tx Tx) error {
		var err error
		v, err = tx.Get(key)
		return err
	})
	return v, err
}

// Clock is implemented by stores that run on a server whose clock every
// client shares (PostgreSQL, Redis). Sessions are timed on it, so that no
// two machines' clocks are ever compared: a session is judged dead on the
// same clock that stamped its heartbeat. It is optional: Now falls back to
// the local clock, which is the engine's own for a store on one machine
// (SQLite, memkv).
type Clock interface {
	// Now returns the server's current time, with View's retry rules.
	Now(ctx context.Context) (time.Time, error)
}

// Now returns s's clock (Clock), or the local clock for a store without
// one.
func Now(ctx context.Context, s Store) (time.Time, error) {
	if c, ok := s.(Clock); ok {
		return c.Now(ctx)
	}
	return time.Now(), nil
}

// Excluder is implemented by stores that can run one read-write
// transaction during which no other transaction, of any client, commits
// a write. It is what a consistent point-in-time copy of a whole volume
// needs while other machines keep writing: a Txn alone would see one
// consistent state too, but a serializable store may retry a long reader
// forever while short writers keep committing (or, with snapshots, let
// them commit under it); Exclusive holds them off instead.
//
// The guarantee, for every backend:
//   - fn runs in one read-write transaction that commits atomically, all
//     or nothing, like Txn; an error from fn writes nothing.
//   - From before fn's first read until its commit, no other transaction
//     (of this process or any other machine) commits a write: fn sees one
//     state and nothing changes under it. Transactions whose commit was
//     already under way when Exclusive began are ordered before it.
//   - Other writers wait, blocked (PostgreSQL: for as long as the
//     Exclusive runs) or retrying with backoff (SQLite across processes,
//     Redis: within their retry bound, 30 s by default), and then proceed
//     normally. Views and single reads proceed beside it.
//   - fn may read and write a few hundred thousand keys (paged Scans over
//     many prefixes); no per-transaction read or statement limit applies.
//   - If the process running Exclusive dies, nothing fn wrote is visible
//     and other writers resume within a bound the backend documents: at
//     once for SQLite and for PostgreSQL (the connection closes), within
//     15 s for Redis (the freeze's TTL).
//
// Two Exclusives exclude each other. A conflict (waiting for another
// Exclusive, a serialization failure) runs fn again from scratch, as Txn
// does; a backend that cannot tell whether the hold lasted until the
// commit (Redis, after a stall past its TTL) fails without writing.
type Excluder interface {
	Exclusive(ctx context.Context, fn func(tx Tx) error) error
}

// Exclusive runs fn through s's Excluder, or in Txn for a store without
// one. The fallback still gives fn one consistent state, but not the rest
// of the guarantee: fn may run many times while writers keep committing,
// and may never finish inside the retry bound.
func Exclusive(ctx context.Context, s Store, fn func(tx Tx) error) error {
	if e, ok := s.(Excluder); ok {
		return e.Exclusive(ctx, fn)
	}
	return s.Txn(ctx, fn)
}

// Syncer is implemented by stores whose commits are not durable against
// power loss until a sync (SQLite with synchronous=NORMAL). Sync returns
// once every transaction committed before the call is durable.
type Syncer interface {
	Sync(ctx context.Context) error
}

// PrefixEnd returns the least key greater than every key starting with
// prefix, or nil if there is none (prefix empty or all 0xff): drop the
// trailing 0xff bytes and add one to the last byte left. It is the
// exclusive upper bound of a prefix scan.
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// SnapshotViewer is implemented by stores whose View reads one MVCC
// snapshot: a View of any length sees the state of its first read, and
// writers neither fail it nor wait for it (SQLite's WAL readers and
// PostgreSQL; memkv too, whose writers wait only to publish). PostgreSQL may still fail a long
// SERIALIZABLE READ ONLY View at commit (a serialization failure), which
// runs it again like any conflict. Redis is not one: its View validates
// every read at EXEC, so a long View under writers conflicts, and runs
// again, until they pause.
type SnapshotViewer interface {
	SnapshotViews() bool
}

// ConsistentRead runs fn, which must only read, in one consistent state
// of s: in a View where s's Views are snapshots (SnapshotViewer), so
// writers go on; otherwise in an Exclusive, so writers wait while fn
// runs. Either way fn may run more than once (a retry); only the last
// run's reads count.
func ConsistentRead(ctx context.Context, s Store, fn func(tx Tx) error) error {
	if v, ok := s.(SnapshotViewer); ok && v.SnapshotViews() {
		return s.View(ctx, fn)
	}
	return Exclusive(ctx, s, fn)
}
