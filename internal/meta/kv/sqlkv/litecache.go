package sqlkv

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// The SQLite cache (kv.Cacher, kv.AbsentKnower). A lookup or getattr
// through SQLite is a read transaction on a reader connection, and every
// commit in between makes SQLite drop that connection's page cache: some
// 30-40 µs of cgo and WAL reads for three keys, where the cache answers
// in one pread. It holds values of the keys kvmeta names (attributes and
// entries) as of one commit of the database, and answers point reads
// (GetOne, ReadFollow, KnownAbsent) only while no commit it does not
// know has happened since: exact, the database's state at the instant
// of the answer, so any read may have it (an open's too, which must see
// the last close anywhere; a meta.Cached is told the answer is current).
//
// How it knows: SQLite's WAL index (the -shm file every connection to
// the database maps, in every process) begins with a header whose
// iChange counter every committing transaction raises by one
// (sqlite.org/walformat.html); a commit is visible to readers only once
// the header says so. The cache compares the counter together with the
// header's mxFrame (walMark; "the counter" below means both, "one past"
// the counter alone) and holds the database's state at one such mark,
// at, and
//
//   - a read first reads the counter (a pread of the header) and is
//     answered only if it is at, else the cache empties (an empty cache
//     is the state at any value) and the read goes to the database;
//   - a value read from the database is kept only if the counter was
//     the same before the read transaction began and after it ended (so
//     the snapshot was that state) and is still at (or the cache, empty,
//     moves to it);
//   - this process's own commits hold SQLite's one write lock from BEGIN
//     IMMEDIATE to COMMIT, so the mark read inside the transaction (hb)
//     is the state it started from. After COMMIT (which raised the
//     counter by one, or not at all if it changed no page) the mark is
//     read again, then the writer's PRAGMA data_version, which moves only
//     when another connection commits: unchanged, the mark read after
//     COMMIT is hb and this transaction, and the cache, if it was at hb
//     (or a reader already moved it on), takes the transaction's writes
//     and moves to that mark. Anything else (another process committed,
//     the header could not be read) empties it. A read that finds the
//     counter at or one past the cache's while this process writes goes
//     to the database but leaves the cache be: the change may be this
//     process's, about to be taken in.
//
// So another mount of the same database file (another process) changes
// nothing unseen: its first commit empties this cache at the next read.
// A process killed while writing the header leaves SQLite to rebuild the
// WAL index, which may start the counter over but keeps mxFrame, the
// WAL's last commit: the pair repeats only if the WAL also restarted and
// both came back to exactly the cache's values while it read nothing.
// A new directory's entries are known absent from its creation (kv.
// FreshPrefix) until the cache empties, so the lookups before the creates
// in it need no read. The cache empties when it reaches liteMax values.

// walIndexVersion is the WAL index header's iVersion, and walHeaderSize
// the size of one copy of the header.
const (
	walIndexVersion = 3007000
	walHeaderSize   = 48
)

// liteAfterCommit, when set (tests), runs between a commit of this
// process and the counter read after it.
var liteAfterCommit func()

// liteMax bounds the values held; reaching it empties the cache.
var liteMax = 1 << 18 // a variable for tests

// freshMax bounds the fresh prefixes held; reaching it forgets them.
const freshMax = 1 << 12

// liteTxnMax bounds the cached keys one write transaction (or group
// member) records: one that writes more (a load, a big clone) empties
// the cache when it commits instead of filling it, so that bulk writes
// cost no memory.
const liteTxnMax = 64

// liteCache is a Store's SQLite cache.
type liteCache struct {
	shm      *os.File // the -shm file, read-only
	prefixes atomic.Pointer[[][]byte]
	served   atomic.Int64

	mu      sync.Mutex
	at      walMark // the header mark m and fresh are the state at
	valid   bool    // at means something
	writing bool    // this process's write transaction runs (begin to end)
	m       map[string]liteValue
	fresh   map[string]struct{} // prefixes with no key but those in m
	lens    []int               // the lengths of fresh's prefixes
}

// liteValue is a cached value; absent keys are held too.
type liteValue struct {
	v       []byte // never modified once stored
	present bool
}

// value returns a copy of the value for a reader (nil: absent).
func (lv liteValue) value() []byte {
	if !lv.present {
		return nil
	}
	return append([]byte{}, lv.v...)
}

// newLiteCache opens the WAL index of the database at path; nil if
// there is none (the database is not in WAL mode). The file stays open
// until close, after the pool's connections are closed: closing any
// descriptor of the -shm drops the locks SQLite's connections in this
// process hold on it (see checkpointer.shm). A header not readable now
// (another process's commit half-written) only makes lookups go to
// SQLite until it is.
func newLiteCache(path string) *liteCache {
	f, err := os.Open(path + "-shm")
	if err != nil {
		return nil
	}
	return &liteCache{shm: f, m: map[string]liteValue{}}
}

// close releases the -shm file; the store calls it once the pool's
// connections are closed.
func (c *liteCache) close() { _ = c.shm.Close() }

// walMark is what the cache compares of the WAL index header: the
// change counter, and the last commit's frame in the WAL (mxFrame),
// which a rebuilt index keeps where the counter may start over.
type walMark struct{ change, frames uint32 }

// follows says whether m is one commit after o (by the counter).
func (m walMark) follows(o walMark) bool { return m.change == o.change+1 }

// counter reads the WAL index header's mark. The header is kept twice;
// a commit writes the second copy, then the first, so, as SQLite's own
// readers do, it takes the mark only if both copies agree. false:
// unreadable, being written, or being rebuilt.
func (c *liteCache) counter() (walMark, bool) {
	var h [2 * walHeaderSize]byte
	if n, _ := c.shm.ReadAt(h[:], 0); n < len(h) {
		return walMark{}, false
	}
	if !bytes.Equal(h[:walHeaderSize], h[walHeaderSize:]) ||
		binary.NativeEndian.Uint32(h[0:]) != walIndexVersion || h[12] != 1 {
		return walMark{}, false
	}
	return walMark{binary.NativeEndian.Uint32(h[8:]), binary.NativeEndian.Uint32(h[16:])}, true
}

// setPrefixes names the keys kept.
func (c *liteCache) setPrefixes(prefixes [][]byte) {
	ps := make([][]byte, len(prefixes))
	for i, p := range prefixes {
		ps[i] = slices.Clone(p)
	}
	c.prefixes.Store(&ps)
	c.mu.Lock()
	c.emptyAt(c.at, c.valid)
	c.mu.Unlock()
}

// worth says whether key is one the cache keeps.
func (c *liteCache) worth(key []byte) bool {
	ps := c.prefixes.Load()
	if ps == nil {
		return false
	}
	for _, p := range *ps {
		if bytes.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// emptyAt empties the cache, which is then the state at n (if ok).
func (c *liteCache) emptyAt(n walMark, ok bool) {
	clear(c.m)
	c.fresh, c.lens = nil, nil
	c.at, c.valid = n, ok
}

// current says, with c.mu held, whether the cache is the database's
// state at mark n (read now; ok: read at all), emptying it if it is not:
// unless this process's write transaction may have made the one commit
// since, which committed is about to apply (emptying here would drop the
// fresh prefixes of a mount that creates in parallel at every commit).
func (c *liteCache) current(n walMark, ok bool) bool {
	if ok && c.valid && n == c.at {
		return true
	}
	if c.ownNext(n, ok) || (!ok && c.writing) {
		return false // committed decides (a header being written reads !ok)
	}
	if c.valid || len(c.m) > 0 {
		c.emptyAt(n, ok)
	}
	return false
}

// ownNext says, with c.mu held, whether mark n may be the cache's state
// plus what this process's running transaction did: its commit, or a
// restart of the WAL (mxFrame back to 0) before it. committed decides.
func (c *liteCache) ownNext(n walMark, ok bool) bool {
	return ok && c.valid && c.writing && (n.change == c.at.change || n.follows(c.at))
}

// get answers key from the cache with c.mu held: its value (nil when
// absent) and whether the cache knows it.
func (c *liteCache) get(key []byte) ([]byte, bool) {
	if lv, ok := c.m[string(key)]; ok {
		return lv.value(), true
	}
	for _, n := range c.lens {
		if len(key) >= n {
			if _, ok := c.fresh[string(key[:n])]; ok {
				return nil, true
			}
		}
	}
	return nil, false
}

// addFresh notes prefixes under which no key exists but those in m.
func (c *liteCache) addFresh(prefixes [][]byte) {
	if len(prefixes) == 0 {
		return
	}
	if len(c.fresh)+len(prefixes) > freshMax {
		c.fresh, c.lens = nil, nil
		return
	}
	if c.fresh == nil {
		c.fresh = map[string]struct{}{}
	}
	for _, p := range prefixes {
		c.fresh[string(p)] = struct{}{}
		if !slices.Contains(c.lens, len(p)) {
			c.lens = append(c.lens, len(p))
		}
	}
}

// followRead is what a ReadFollow returns.
type followRead struct {
	vals                [][]byte
	from, next, nextVal []byte
}

// byKey returns what r read of keys and f (nil: none), by key (nil:
// absent).
func (r followRead) byKey(f *kv.Follow, keys [][]byte) map[string][]byte {
	read := make(map[string][]byte, len(keys)+2)
	for j, k := range keys {
		read[string(k)] = r.vals[j]
	}
	if f != nil {
		read[string(f.From)] = r.from
		if r.next != nil {
			read[string(r.next)] = r.nextVal
		}
	}
	return read
}

// readThrough answers keys and f (nil: none) as ReadFollow does: all
// from the cache, or else all by read (a transaction), whose values it
// keeps when the header's mark was the same before and after it. A hit
// tells ctx's meta.Cached, if any, that the answer is current.
func (c *liteCache) readThrough(ctx context.Context, f *kv.Follow, keys [][]byte, read func() (followRead, error)) (followRead, error) {
	r, before, counted, hit := c.lookup(f, keys)
	if hit {
		served(ctx)
		return r, nil
	}
	if !counted {
		before, counted = c.counter()
	}
	r, err := read()
	if err == nil && counted {
		after, ok := c.counter()
		c.fill(before, after, ok, r.byKey(f, keys))
	}
	return r, err
}

// lookup answers keys and f from the cache, all or nothing, and returns
// the mark it compared (counted: one was read).
func (c *liteCache) lookup(f *kv.Follow, keys [][]byte) (r followRead, mark walMark, counted, hit bool) {
	for _, k := range keys {
		if !c.worth(k) {
			return r, mark, false, false
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	mark, counted = c.counter()
	if !c.current(mark, counted) {
		return r, mark, counted, false
	}
	var ok bool
	r.vals = make([][]byte, len(keys))
	for i, k := range keys {
		if r.vals[i], ok = c.get(k); !ok {
			return followRead{}, mark, counted, false
		}
	}
	if f != nil {
		if r.from, ok = c.get(f.From); !ok {
			return followRead{}, mark, counted, false
		}
		if r.next = f.Key(r.from); r.next != nil {
			if r.nextVal, ok = c.get(r.next); !ok {
				return followRead{}, mark, counted, false
			}
		}
	}
	c.served.Add(1)
	return r, mark, counted, true
}

// served tells a read's meta.Cached, if it has one, that the cache
// answered it: its answer is current now.
func served(ctx context.Context) {
	if c := meta.CachedOf(ctx); c != nil {
		c.Served(time.Now())
	}
}

// knownAbsent says whether the cache knows key absent now.
func (c *liteCache) knownAbsent(key []byte) bool {
	if !c.worth(key) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.current(c.counter()) {
		return false
	}
	v, ok := c.get(key)
	if ok && v == nil {
		c.served.Add(1)
		return true
	}
	return false
}

// fill keeps values read in a transaction that began when the counter
// read before and ended when it read after (both ok): only if the two
// are the same, and the cache is at that state or can move there.
func (c *liteCache) fill(before, after walMark, ok bool, read map[string][]byte) {
	if !ok || before != after {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid || c.at != before {
		n, ok := c.counter()
		if !ok || n != before || c.ownNext(n, ok) {
			return
		}
		c.emptyAt(n, true)
	}
	for k, v := range read {
		if !c.worth([]byte(k)) {
			continue
		}
		if len(c.m) >= liteMax {
			c.emptyAt(c.at, true)
		}
		c.m[k] = liteValue{v: slices.Clone(v), present: v != nil}
	}
}

// inTxn answers a read of a write transaction w (lg: what the group
// members before it wrote, or nil) without the database where it can:
// from its own writes, the group's, or the cache if it is the state the
// transaction began from (it holds the write lock: nothing else commits
// meanwhile).
func (c *liteCache) inTxn(w, lg *liteWrites, key []byte) ([]byte, bool) {
	if !w.ok || w.big || (lg != nil && lg.big) || !c.worth(key) {
		return nil, false
	}
	for _, ws := range []*liteWrites{w, lg} {
		if ws == nil {
			continue
		}
		if lv, ok := ws.m[string(key)]; ok {
			return lv.value(), true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid || c.at != w.before {
		return nil, false
	}
	return c.get(key)
}

// liteWrites is what one write transaction of this process changed.
type liteWrites struct {
	before walMark // the header mark inside the transaction
	ok     bool    // before and dv were read
	// version reads the writer's PRAGMA data_version, and dv is its value
	// inside the transaction: unchanged after COMMIT, no other connection
	// committed in between.
	version func() (int64, error)
	dv      int64
	wrote   bool // any write at all, kept or not
	big     bool // more than liteTxnMax cached keys: m and fresh dropped
	m       map[string]liteValue
	fresh   [][]byte
}

// begin starts recording a write transaction that holds the write lock,
// on the writer whose data_version version reads; end must follow, after
// committed if it committed, and before the writer is handed on.
func (c *liteCache) begin(version func() (int64, error)) *liteWrites {
	w := &liteWrites{m: map[string]liteValue{}, version: version}
	w.before, w.ok = c.counter()
	if dv, err := version(); err == nil && w.ok {
		w.dv = dv
	} else {
		w.ok = false
	}
	c.mu.Lock()
	c.writing = true
	c.mu.Unlock()
	return w
}

// end marks the write transaction begin started over.
func (c *liteCache) end() {
	c.mu.Lock()
	c.writing = false
	c.mu.Unlock()
}

// set records a Set (present) or Delete of key.
func (c *liteCache) set(w *liteWrites, key, value []byte, present bool) {
	w.wrote = true
	if w.big || !c.worth(key) {
		return
	}
	if _, ok := w.m[string(key)]; !ok && len(w.m) >= liteTxnMax {
		w.big, w.m, w.fresh = true, nil, nil
		return
	}
	if !present {
		value = nil
	} else if value == nil {
		value = []byte{}
	}
	w.m[string(key)] = liteValue{v: slices.Clone(value), present: present}
}

// member starts recording one group member of the group transaction w.
func (w *liteWrites) member() *liteWrites {
	return &liteWrites{before: w.before, ok: w.ok, m: map[string]liteValue{}}
}

// merge adds the writes of a group member that committed to those of the
// group (later ones win).
func (w *liteWrites) merge(o *liteWrites) {
	w.wrote = w.wrote || o.wrote
	if w.big = w.big || o.big; w.big {
		w.m, w.fresh = nil, nil
		return
	}
	for k, v := range o.m {
		w.m[k] = v
	}
	w.fresh = append(w.fresh, o.fresh...)
}

// committed applies a write transaction that committed.
func (c *liteCache) committed(w *liteWrites) {
	if !w.wrote {
		return // COMMIT wrote no frame: the counter did not move
	}
	if liteAfterCommit != nil {
		liteAfterCommit()
	}
	// The mark first, then data_version: unchanged, it says that no other
	// connection committed before the mark was read. The mark alone
	// cannot tell: a COMMIT that changed no page (a delete of a missing
	// key, a value set to itself) does not move it, and another
	// process's commit after it would pass for this one.
	after, ok := c.counter()
	dv, err := w.version()
	mine := ok && w.ok && err == nil && dv == w.dv && !w.big &&
		(after == w.before || after.follows(w.before))
	c.mu.Lock()
	defer c.mu.Unlock()
	if !mine || !c.valid || (c.at != w.before && c.at != after) {
		c.emptyAt(after, ok)
		if !mine {
			return
		}
	}
	if len(c.m)+len(w.m) > liteMax {
		c.emptyAt(after, true)
	}
	for k, v := range w.m {
		c.m[k] = v
	}
	c.addFresh(w.fresh)
	c.at = after
}

// FreshPrefix implements kv.FreshPrefixer: on SQLite, the cache knows
// the keys under prefix absent from the commit on (but those written),
// until it empties.
func (t *tx) FreshPrefix(prefix []byte) {
	if t.lw != nil && !t.lw.big && t.lite.worth(prefix) {
		t.lw.fresh = append(t.lw.fresh, slices.Clone(prefix))
	}
}
