package sqlkv

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// openLite opens n Stores on one new SQLite file, each keeping keys
// under "a" (values) and "e" (entries naming "a" keys) in its cache:
// for SQLite, two Stores are two processes (connections of their own,
// one shared WAL index).
func openLite(t *testing.T, n int) (string, []*Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "meta.db")
	var out []*Store
	for range n {
		s, err := Open(context.Background(), "sqlite://"+path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		st := s.(*Store)
		if st.lite == nil {
			t.Fatal("no SQLite cache")
		}
		kv.CacheKeys(st, []byte("a"), []byte("e"))
		out = append(out, st)
	}
	return path, out
}

// cachedCtx is the context of a read that may be answered from a cache.
func cachedCtx() context.Context {
	return meta.WithCached(context.Background(), &meta.Cached{})
}

func set(t *testing.T, s kv.Store, kvs ...string) {
	t.Helper()
	err := s.Txn(context.Background(), func(tx kv.Tx) error {
		for i := 0; i < len(kvs); i += 2 {
			if kvs[i+1] == "" {
				tx.Delete([]byte(kvs[i]))
			} else {
				tx.Set([]byte(kvs[i]), []byte(kvs[i+1]))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func cachedGet(t *testing.T, s *Store, k string) string {
	t.Helper()
	v, err := s.GetOne(cachedCtx(), []byte(k))
	if err != nil {
		t.Fatal(err)
	}
	return string(v)
}

// TestLiteCacheSeesOtherProcesses: a value this Store cached (read, or
// written by it) is never served once another Store, or a plain SQLite
// connection, changed it; own writes are served from the cache.
func TestLiteCacheSeesOtherProcesses(t *testing.T) {
	path, ss := openLite(t, 2)
	a, b := ss[0], ss[1]
	set(t, a, "a1", "one")
	served := a.CachedReads()
	if got := cachedGet(t, a, "a1"); got != "one" {
		t.Fatalf("a1 = %q, want one", got)
	}
	if a.CachedReads() != served+1 {
		t.Fatalf("own write not served from the cache (%d answers, want %d)", a.CachedReads(), served+1)
	}
	set(t, b, "a1", "two")
	if got := cachedGet(t, a, "a1"); got != "two" {
		t.Fatalf("after another store's write a1 = %q, want two", got)
	}
	if got := cachedGet(t, a, "a1"); got != "two" { // now cached
		t.Fatalf("a1 = %q, want two", got)
	}
	set(t, b, "a1", "three")
	var inTxn []byte
	err := a.Txn(context.Background(), func(tx kv.Tx) error {
		var err error
		inTxn, err = tx.Get([]byte("a1"))
		return err
	})
	if err != nil || string(inTxn) != "three" {
		t.Fatalf("a Txn after another store's write read a1 = %q, %v; want three", inTxn, err)
	}
	set(t, b, "a1", "")
	if got := cachedGet(t, a, "a1"); got != "" {
		t.Fatalf("after another store's delete a1 = %q, want absent", got)
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cachedGet(t, a, "a2")
	if _, err := db.Exec("INSERT INTO shoal_kv (k, v) VALUES (?, ?)", []byte("a2"), []byte("raw")); err != nil {
		t.Fatal(err)
	}
	if got := cachedGet(t, a, "a2"); got != "raw" {
		t.Fatalf("after a plain connection's insert a2 = %q, want raw", got)
	}
}

// TestLiteCacheCommitRace: another Store commits between a commit of
// this one and its reading of the counter after it: the cache must not
// take the other commit for part of its own.
func TestLiteCacheCommitRace(t *testing.T) {
	_, ss := openLite(t, 2)
	a, b := ss[0], ss[1]
	set(t, a, "a1", "one", "a2", "one")
	cachedGet(t, a, "a1")
	liteAfterCommit = func() {
		liteAfterCommit = nil
		set(t, b, "a1", "b", "a2", "b")
	}
	defer func() { liteAfterCommit = nil }()
	set(t, a, "a2", "two")
	if got := cachedGet(t, a, "a1"); got != "b" {
		t.Fatalf("a1 = %q, want b (written by another store right after this one's commit)", got)
	}
	if got := cachedGet(t, a, "a2"); got != "b" {
		t.Fatalf("a2 = %q, want b (this store wrote it, then another)", got)
	}
}

// TestLiteCacheNoopCommitRace: a commit of this Store that changed no
// page (a delete of a missing key) does not move the WAL index's
// counter; another Store's commit right after it must not pass for it.
func TestLiteCacheNoopCommitRace(t *testing.T) {
	_, ss := openLite(t, 2)
	a, b := ss[0], ss[1]
	set(t, a, "a1", "x")
	if got := cachedGet(t, a, "a1"); got != "x" {
		t.Fatalf("a1 = %q", got)
	}
	liteAfterCommit = func() {
		liteAfterCommit = nil
		set(t, b, "a1", "y")
	}
	defer func() { liteAfterCommit = nil }()
	set(t, a, "a9", "") // a delete of a missing key: no page changes
	if got := cachedGet(t, a, "a1"); got != "y" {
		t.Fatalf("a1 = %q, want y (another store's commit right after a no-op one)", got)
	}
}

// TestLiteCacheReadDuringOwnCommit: a read between a commit of this
// Store and the cache's taking it in (another FUSE request, served
// meanwhile) goes to the database, and neither empties the cache nor
// loses what the commit brings: a mount creating in parallel keeps its
// fresh directories known.
func TestLiteCacheReadDuringOwnCommit(t *testing.T) {
	_, ss := openLite(t, 1)
	s := ss[0]
	ctx := context.Background()
	err := s.Txn(ctx, func(tx kv.Tx) error {
		kv.FreshPrefix(tx, []byte("e1/"))
		tx.Set([]byte("a1"), []byte("dir"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var during string
	liteAfterCommit = func() {
		liteAfterCommit = nil
		during = cachedGet(t, s, "a2")
		if s.KnownAbsent(ctx, []byte("e1/y")) {
			t.Error("known absent between the commit and its taking in")
		}
	}
	defer func() { liteAfterCommit = nil }()
	set(t, s, "a2", "new", "e1/x", "2")
	if during != "new" {
		t.Fatalf("a read between the commit and its taking in saw a2 = %q, want new", during)
	}
	if !s.KnownAbsent(ctx, []byte("e1/y")) {
		t.Fatal("the fresh prefix was lost to a read during this store's commit")
	}
	served := s.CachedReads()
	if got := cachedGet(t, s, "e1/x"); got != "2" || s.CachedReads() != served+1 {
		t.Fatalf("e1/x = %q (served from the cache: %v), want 2 from the cache", got, s.CachedReads() == served+1)
	}
}

// TestLiteCacheFresh: a prefix a Txn declares fresh is known absent
// from its commit on, but for what this Store writes under it, until
// another Store writes anything.
func TestLiteCacheFresh(t *testing.T) {
	_, ss := openLite(t, 2)
	a, b := ss[0], ss[1]
	ctx := context.Background()
	err := a.Txn(ctx, func(tx kv.Tx) error {
		kv.FreshPrefix(tx, []byte("e1/"))
		tx.Set([]byte("a1"), []byte("dir"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !a.KnownAbsent(cachedCtx(), []byte("e1/x")) {
		t.Fatal("a name under a fresh prefix is not known absent")
	}
	if !a.KnownAbsent(context.Background(), []byte("e1/x")) {
		t.Fatal("not known absent for a read without a meta.Cached (the cache is exact)")
	}
	set(t, a, "e1/x", "2")
	if a.KnownAbsent(cachedCtx(), []byte("e1/x")) {
		t.Fatal("a name this store wrote under a fresh prefix is known absent")
	}
	vals, from, next, nextVal, err := a.ReadFollow(cachedCtx(), &kv.Follow{From: []byte("e1/x"), Prefix: []byte("a"), Len: 1}, []byte("a1"))
	if err != nil || string(vals[0]) != "dir" || string(from) != "2" || string(next) != "a2" || nextVal != nil {
		t.Fatalf("ReadFollow = %q %q %q %q %v", vals, from, next, nextVal, err)
	}
	set(t, b, "e1/y", "1")
	if a.KnownAbsent(cachedCtx(), []byte("e1/y")) {
		t.Fatal("a name another store wrote is known absent")
	}
	_, from, _, nextVal, err = a.ReadFollow(cachedCtx(), &kv.Follow{From: []byte("e1/y"), Prefix: []byte("a"), Len: 1}, []byte("a1"))
	if err != nil || string(from) != "1" || string(nextVal) != "dir" {
		t.Fatalf("ReadFollow of another store's name = %q %q %v", from, nextVal, err)
	}
}

// TestLiteCacheGroupFailedMember: the writes of a group member that
// failed (rolled back to its savepoint) never reach the cache, nor the
// reads of the members after it; those of the members that committed do.
func TestLiteCacheGroupFailedMember(t *testing.T) {
	_, ss := openLite(t, 1)
	s := ss[0]
	ctx := context.Background()
	set(t, s, "a1", "0", "a2", "0")
	hold, held := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		if err := s.Txn(ctx, func(tx kv.Tx) error { close(held); <-hold; return nil }); err != nil {
			t.Error(err)
		}
	}()
	<-held
	errBoom := errors.New("boom")
	go func() {
		defer wg.Done()
		err := s.Txn(ctx, func(tx kv.Tx) error {
			tx.Set([]byte("a1"), []byte("failed"))
			return errBoom
		})
		if !errors.Is(err, errBoom) {
			t.Errorf("failing member: %v", err)
		}
	}()
	queued(t, s, 1)
	go func() {
		defer wg.Done()
		if err := s.Txn(ctx, func(tx kv.Tx) error { tx.Set([]byte("a2"), []byte("ok")); return nil }); err != nil {
			t.Error(err)
		}
	}()
	queued(t, s, 2)
	var seen string
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := s.Txn(ctx, func(tx kv.Tx) error {
			v1, err1 := tx.Get([]byte("a1"))
			v2, err2 := tx.Get([]byte("a2"))
			seen = string(v1) + "," + string(v2)
			return errors.Join(err1, err2)
		})
		if err != nil {
			t.Error(err)
		}
	}()
	queued(t, s, 3)
	close(hold)
	wg.Wait()
	if seen != "0,ok" {
		t.Fatalf("a member after them read a1,a2 = %s, want 0,ok", seen)
	}
	if s.group.grouped.Load() < 2 {
		t.Fatalf("%d members committed in groups, want 2", s.group.grouped.Load())
	}
	if got := cachedGet(t, s, "a1"); got != "0" {
		t.Fatalf("a1 = %q after a failed member set it, want 0", got)
	}
	if got := cachedGet(t, s, "a2"); got != "ok" {
		t.Fatalf("a2 = %q, want ok", got)
	}
}

// TestLiteCacheRandomized runs random writes, deletes, fresh prefixes
// and cached reads through three Stores on one file, one at a time, and
// checks every read against a model of the committed state.
func TestLiteCacheRandomized(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("SHOAL_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (SHOAL_SEED reruns it)", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	_, ss := openLite(t, 3)
	model := map[string]string{}
	fresh := 0
	key := func() string {
		if rng.IntN(2) == 0 {
			return fmt.Sprintf("a%d", rng.IntN(12))
		}
		return fmt.Sprintf("e%d/%d", rng.IntN(fresh+2), rng.IntN(4))
	}
	served := int64(0)
	for i := range 4000 {
		s := ss[0] // mostly one store, so that its cache lives a while
		if rng.IntN(5) == 0 {
			s = ss[1+rng.IntN(len(ss)-1)]
		}
		switch op := rng.IntN(11); {
		case op < 3:
			n := 1 + rng.IntN(3)
			var kvs []string
			for range n {
				k, v := key(), ""
				if rng.IntN(4) > 0 {
					v = strconv.Itoa(i)
				}
				kvs = append(kvs, k, v)
			}
			set(t, s, kvs...)
			for j := 0; j < len(kvs); j += 2 {
				if kvs[j+1] == "" {
					delete(model, kvs[j])
				} else {
					model[kvs[j]] = kvs[j+1]
				}
			}
		case op == 8:
			// read, write what was read under another key, read it back
			k, k2 := key(), key()
			var got, back string
			err := s.Txn(context.Background(), func(tx kv.Tx) error {
				v, err := tx.Get([]byte(k))
				got = string(v)
				tx.Set([]byte(k2), append(v, '+'))
				v, err2 := tx.Get([]byte(k2))
				back = string(v)
				return errors.Join(err, err2)
			})
			if err != nil {
				t.Fatal(err)
			}
			if got != model[k] || back != got+"+" {
				t.Fatalf("op %d (seed %d): in a Txn %s = %q, want %q; %s read back %q", i, seed, k, got, model[k], k2, back)
			}
			model[k2] = got + "+"
		case op == 3:
			fresh++
			p := fmt.Sprintf("e%d/", fresh+1)
			for k := range model {
				if len(k) > len(p) && k[:len(p)] == p {
					fresh-- // names there already: not fresh
					p = ""
					break
				}
			}
			if p == "" {
				continue
			}
			err := s.Txn(context.Background(), func(tx kv.Tx) error {
				kv.FreshPrefix(tx, []byte(p))
				tx.Set([]byte("a0"), []byte(strconv.Itoa(i)))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			model["a0"] = strconv.Itoa(i)
		case op < 6:
			k := key()
			if got := cachedGet(t, s, k); got != model[k] {
				t.Fatalf("op %d (seed %d): %s = %q, want %q", i, seed, k, got, model[k])
			}
		case op < 8:
			k := key()
			if s.KnownAbsent(cachedCtx(), []byte(k)) && model[k] != "" {
				t.Fatalf("op %d (seed %d): %s known absent, holds %q", i, seed, k, model[k])
			}
		default:
			f := &kv.Follow{From: []byte(fmt.Sprintf("e%d/%d", rng.IntN(fresh+2), rng.IntN(4))), Prefix: []byte("a"), Len: 1}
			k := key()
			vals, from, next, nextVal, err := s.ReadFollow(cachedCtx(), f, []byte(k))
			if err != nil {
				t.Fatal(err)
			}
			if string(vals[0]) != model[k] || string(from) != model[string(f.From)] {
				t.Fatalf("op %d (seed %d): ReadFollow %s, %s = %q, %q; want %q, %q", i, seed, k, f.From, vals[0], from, model[k], model[string(f.From)])
			}
			if next != nil && string(nextVal) != model[string(next)] {
				t.Fatalf("op %d (seed %d): followed %s = %q, want %q", i, seed, next, nextVal, model[string(next)])
			}
		}
	}
	for _, s := range ss {
		served += s.CachedReads()
	}
	if served == 0 {
		t.Fatal("no read was answered from a cache")
	}
	t.Logf("%d reads answered from the caches", served)
}

// TestLiteCacheConcurrent: while one Store increments a counter and
// another Store (and the same one) increments theirs, cached reads of
// each counter never go back and never miss an increment whose Txn had
// returned before the read began.
func TestLiteCacheConcurrent(t *testing.T) {
	_, ss := openLite(t, 2)
	ctx := context.Background()
	keys := []string{"a-x", "a-y"}
	var done [2]atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := int64(1); ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				err := s.Txn(ctx, func(tx kv.Tx) error {
					tx.Set([]byte(keys[i]), []byte(strconv.FormatInt(n, 10)))
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				done[i].Store(n)
			}
		}()
	}
	deadline := time.Now().Add(2 * time.Second)
	var last [2][2]int64 // by reading store, by key
	reads := 0
	for time.Now().Before(deadline) {
		for r, s := range ss {
			for i, k := range keys {
				floor := done[i].Load()
				v, err := s.GetOne(cachedCtx(), []byte(k))
				if err != nil {
					t.Fatal(err)
				}
				n, _ := strconv.ParseInt(string(v), 10, 64)
				if n < floor || n < last[r][i] {
					t.Fatalf("store %d read %s = %d after %d committed and %d read", r, k, n, floor, last[r][i])
				}
				last[r][i] = n
				reads++
			}
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d reads, %d answered from the caches", reads, ss[0].CachedReads()+ss[1].CachedReads())
}

// TestLiteCacheBigTxn: a transaction that writes more than liteTxnMax
// cached keys leaves the cache empty, not full of them, and reads its own
// writes from the database.
func TestLiteCacheBigTxn(t *testing.T) {
	_, ss := openLite(t, 1)
	s := ss[0]
	set(t, s, "a-small", "1")
	cachedGet(t, s, "a-small")
	err := s.Txn(context.Background(), func(tx kv.Tx) error {
		for i := range 2 * liteTxnMax {
			k := []byte(fmt.Sprintf("a%d", i))
			tx.Set(k, []byte(strconv.Itoa(i)))
			if v, err := tx.Get(k); err != nil || string(v) != strconv.Itoa(i) {
				return fmt.Errorf("read back %s = %q, %v", k, v, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.lite.mu.Lock()
	n := len(s.lite.m)
	s.lite.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d values cached after a big transaction, want none", n)
	}
	for _, k := range []string{"a-small", "a7", "a100"} {
		want := map[string]string{"a-small": "1", "a7": "7", "a100": "100"}[k]
		if got := cachedGet(t, s, k); got != want {
			t.Fatalf("%s = %q, want %q", k, got, want)
		}
	}
}

// TestLiteCacheBound: reaching liteMax empties the cache, fresh prefixes
// included, and answers stay right.
func TestLiteCacheBound(t *testing.T) {
	old := liteMax
	liteMax = 8
	defer func() { liteMax = old }()
	_, ss := openLite(t, 1)
	s := ss[0]
	err := s.Txn(context.Background(), func(tx kv.Tx) error {
		kv.FreshPrefix(tx, []byte("e9/"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		set(t, s, fmt.Sprintf("a%d", i), strconv.Itoa(i))
		if got := cachedGet(t, s, fmt.Sprintf("a%d", i)); got != strconv.Itoa(i) {
			t.Fatalf("a%d = %q", i, got)
		}
	}
	s.lite.mu.Lock()
	n := len(s.lite.m)
	s.lite.mu.Unlock()
	if n > liteMax {
		t.Fatalf("%d values held, bound %d", n, liteMax)
	}
	if !bytes.Equal([]byte(cachedGet(t, s, "a3")), []byte("3")) {
		t.Fatal("a3 lost")
	}
}
