package rediskv

import (
	"context"
	"fmt"
	"testing"
	"time"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// knownAbsent asks s, as a mount's lookup does, whether key is known
// absent, and returns the instant reported.
func knownAbsent(s *Store, key string) (time.Time, bool) {
	var c meta.Cached
	ok := s.KnownAbsent(meta.WithCached(context.Background(), &c), []byte(key))
	return c.At(), ok
}

// untilKnownAbsent asks until key is known absent.
func untilKnownAbsent(t *testing.T, s *Store, key string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if at, ok := knownAbsent(s, key); ok {
			if at.IsZero() || time.Since(at) > time.Second {
				t.Fatalf("%s known absent as of %v", key, at)
			}
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s was never known absent", key)
}

// TestFreshPrefixKnownAbsent: the keys under a prefix a committed
// transaction named fresh are known absent without a round trip, and a
// write transaction's first read round takes them as absent (one round
// trip: its commit); this client's own writes under it are never
// answered absent, and another client's are not after a moment.
func TestFreshPrefixKnownAbsent(t *testing.T) {
	url := redisNamespaceURL(t)
	s := openCached(t, url)
	other := openCached(t, url)
	dir := "D\x00\x00\x00\x00\x00\x00\x01\x02" // a 9-byte prefix
	ctx := context.Background()
	setKey(t, s, "Astart", "x")
	untilCached(t, s, "Astart") // tracking runs (a new connection forgets every record)
	if err := s.Txn(ctx, func(tx kv.Tx) error {
		tx.Set([]byte("Aparent"), []byte("p0"))
		kv.FreshPrefix(tx, []byte(dir))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if s.KnownAbsent(ctx, []byte(dir+"n0")) {
		t.Fatal("known absent for a read without meta.Cached")
	}
	untilKnownAbsent(t, s, dir+"n0")
	if _, ok := knownAbsent(s, "D\x00\x00\x00\x00\x00\x00\x01\x03n0"); ok {
		t.Fatal("a key under another prefix was known absent")
	}

	// A create's transaction: the parent (written just now: a seed) and
	// the entry (fresh): no read, one round trip.
	var rt roundTrips
	s.client.AddHook(&rt)
	if err := s.Txn(ctx, func(tx kv.Tx) error {
		vals, err := kv.GetMany(tx, [][]byte{[]byte("Aparent"), []byte(dir + "n1")})
		if err != nil {
			return err
		}
		if vals[1] != nil {
			t.Errorf("entry read %q, want absent", vals[1])
		}
		tx.Set([]byte("Aparent"), []byte("p1"))
		tx.Set([]byte(dir+"n1"), []byte("e1"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := rt.n.Load(); n != 1 {
		t.Errorf("the create made %d round trips, want 1 (its commit)", n)
	}
	// Read own writes: n1 exists now.
	if _, ok := knownAbsent(s, dir+"n1"); ok {
		t.Fatal("a key this client just wrote was known absent")
	}
	untilKnownAbsent(t, s, dir+"n2")

	// Another client's write: no answer current after it returned says
	// absent, and within a second none says so at all.
	setKey(t, other, dir+"n3", "e3")
	wrote := time.Now()
	for time.Since(wrote) < time.Second {
		if at, ok := knownAbsent(s, dir+"n3"); ok && !at.Before(wrote) {
			t.Fatalf("another client's key known absent as of %v, after its write returned at %v", at, wrote)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, ok := knownAbsent(s, dir+"n3"); ok {
		t.Fatal("another client's key still known absent a second after its write")
	}
	// A wrong seed (absent where another client wrote) is a conflict, and
	// the retry reads the stored value.
	var seen []byte
	if err := s.Txn(ctx, func(tx kv.Tx) error {
		v, err := tx.Get([]byte(dir + "n3"))
		seen = v
		tx.Set([]byte("Aparent"), []byte("p2"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if string(seen) != "e3" {
		t.Errorf("read %q, want e3", seen)
	}
}

// TestCachedFollowWithoutParent: a lookup's round (the directory's
// attributes, the entry, the child's attributes) is served from the
// cache for the entry and the child while the directory's attributes,
// just rewritten by this client, may not be: no round trip, and the
// directory's attributes are read only if asked for.
func TestCachedFollowWithoutParent(t *testing.T) {
	s := openCached(t, redisNamespaceURL(t))
	setKey(t, s, "Dpp", "c1")
	setKey(t, s, "Ac1", "child")
	setKey(t, s, "App", "dir0")
	untilCached(t, s, "Dpp")
	untilCached(t, s, "Ac1")
	setKey(t, s, "App", "dir1") // not servable for a moment
	f := kv.Follow{From: []byte("Dpp"), Prefix: []byte("A"), Off: 0, Len: 2}
	var rt roundTrips
	s.client.AddHook(&rt)
	var c meta.Cached
	var child []byte
	err := s.View(meta.WithCached(context.Background(), &c), func(tx kv.Tx) error {
		if err := kv.PrefetchFollow(tx, f, []byte("App")); err != nil {
			return err
		}
		var err error
		child, err = tx.Get([]byte("Ac1"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(child) != "child" || c.At().IsZero() {
		t.Fatalf("child %q, cached at %v: want child from the cache", child, c.At())
	}
	if n := rt.n.Load(); n != 0 {
		t.Errorf("the lookup made %d round trips, want 0", n)
	}
	// Asking for the directory's attributes reads them, current.
	var dir []byte
	err = s.View(meta.WithCached(context.Background(), &meta.Cached{}), func(tx kv.Tx) error {
		if err := kv.PrefetchFollow(tx, f, []byte("App")); err != nil {
			return err
		}
		var err error
		dir, err = tx.Get([]byte("App"))
		return err
	})
	if err != nil || string(dir) != "dir1" {
		t.Fatalf("directory read %q, %v; want dir1", dir, err)
	}
}

// TestFreshPrefixFullTableKeepsRecent: when the records fill the table,
// those used least lately go, not every one: a directory a mount keeps
// creating in stays known fresh while it makes and fills many others.
func TestFreshPrefixFullTableKeepsRecent(t *testing.T) {
	old := freshMax
	t.Cleanup(func() { freshMax = old }) // after the store's own cleanup: its goroutines read it
	freshMax = 64
	s := openCached(t, redisNamespaceURL(t))
	ctx := context.Background()
	setKey(t, s, "Astart", "x")
	untilCached(t, s, "Astart") // tracking runs (a new connection forgets every record)
	prefix := func(i int) string { return fmt.Sprintf("D\x00\x00\x00\x00\x00\x00%c%c", 1+i/200, 1+i%200) }
	fresh := func(i int) {
		t.Helper()
		if err := s.Txn(ctx, func(tx kv.Tx) error {
			tx.Set([]byte(fmt.Sprint("A", i)), []byte("dir"))
			kv.FreshPrefix(tx, []byte(prefix(i)))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	fresh(0) // the directory in use
	untilKnownAbsent(t, s, prefix(0)+"n0")
	for i := 1; i <= 3*freshMax; i++ { // others, made and filled
		fresh(i)
		setKey(t, s, prefix(i)+"n0", "e")
		if i%8 == 0 { // the one in use gets a new entry now and then
			setKey(t, s, fmt.Sprint(prefix(0), "m", i), "e")
			untilKnownAbsent(t, s, prefix(0)+"n0")
		}
	}
	untilKnownAbsent(t, s, prefix(0)+"n1")
	if _, ok := knownAbsent(s, prefix(1)+"n1"); ok {
		t.Error("the first of the others is still known fresh: no record was forgotten")
	}
}
