package kvmeta_test

import (
	"context"
	"net/url"
	"syscall"
	"testing"

	"shoal/internal/meta"
	"shoal/internal/meta/kv/kvtest"
)

// TestPostgresRoundTrips counts the network round trips, and the
// statements, of the reads a stat costs on PostgreSQL, through a proxy in
// front of the server: a lookup, of a name present or missing, is one
// round trip carrying one statement (a SELECT of the directory's
// attributes, the entry and the attributes it names, kv.ViewAhead, in an
// implicit SERIALIZABLE READ ONLY transaction: no BEGIN or COMMIT); a
// getattr, an open that records nothing and a read of a chunk whose list
// the chunk cache holds the same. Write transactions
// guess the reads this store made or wrote before (sqlkv's guess.go): a
// create after the lookup of its name, a write chunk of a file written or
// read before and an unlink of a name looked up are one round trip (BEGIN,
// the guard checking the guesses, the writes and COMMIT). It also checks
// the answers, and logs what the other operations cost.
func TestPostgresRoundTrips(t *testing.T) {
	base := serviceURL(t, "SHOAL_TEST_PG")
	u, err := url.Parse(pgSchema(t, base))
	if err != nil {
		t.Fatal(err)
	}
	p := kvtest.NewProxy(t, u.Host)
	p.CountPostgres()
	u.Host = p.Addr()
	e := openSQL(t, u.String())
	t.Cleanup(func() { _ = e.Close() })
	bg := context.Background()
	if err := e.Format(bg, meta.Format{Name: "test", Storage: "mem", BlockSize: 1 << 20}, false); err != nil {
		t.Fatalf("Format: %v", err)
	}
	ctx := meta.WithCred(bg, meta.Cred{Uid: 1000, Gid: 1000, Trusted: true})
	// costs runs op a few times and returns the fewest round trips one
	// run took (a pooled connection idle for a while is pinged first),
	// and the fewest statements.
	costs := func(what string, op func(i int) error) (int64, int64) {
		t.Helper()
		best, stmts := int64(-1), int64(-1)
		for i := range 3 {
			before, beforeStmts := p.RoundTrips(), p.Statements()
			if err := op(i); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if n := p.RoundTrips() - before; best < 0 || n < best {
				best = n
			}
			if n := p.Statements() - beforeStmts; stmts < 0 || n < stmts {
				stmts = n
			}
		}
		t.Logf("%s: %d round trips, %d statements", what, best, stmts)
		return best, stmts
	}
	cost := func(what string, op func(i int) error) int64 {
		t.Helper()
		n, _ := costs(what, op)
		return n
	}
	// one checks that op costs one round trip carrying one statement:
	// no BEGIN or COMMIT statement either (a single statement runs in an
	// implicit SERIALIZABLE READ ONLY transaction).
	one := func(what string, op func(i int) error) {
		t.Helper()
		if n, stmts := costs(what, op); n != 1 || stmts != 1 {
			t.Errorf("%s: %d round trips and %d statements, want 1 and 1", what, n, stmts)
		}
	}
	names := []string{"a", "b", "c"}
	var inos [3]meta.Ino
	cost("create", func(i int) error {
		ent, err := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: names[i], Type: meta.TypeFile, Mode: 0o644, Exclusive: true})
		inos[i] = ent.Ino
		return err
	})
	// As through FUSE: the kernel looks a name up before creating it,
	// and the create then guesses what the lookup read (the directory's
	// attributes, the entry absent).
	if n := cost("lookup and create", func(i int) error {
		name := names[i] + "2"
		if _, err := e.Lookup(ctx, meta.RootIno, name); err != syscall.ENOENT {
			t.Errorf("lookup of a name to create: %v, want ENOENT", err)
		}
		_, err := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: name, Type: meta.TypeFile, Mode: 0o644, Exclusive: true})
		return err
	}); n != 2 {
		t.Errorf("lookup and create: %d round trips, want 2 (the create one: BEGIN, the guard of its guessed reads, the writes and COMMIT)", n)
	}
	one("lookup", func(i int) error {
		ent, err := e.Lookup(ctx, meta.RootIno, names[i])
		if err == nil && (ent.Ino != inos[i] || ent.Attr.Type != meta.TypeFile) {
			t.Errorf("lookup %s: got %+v, want ino %d", names[i], ent, inos[i])
		}
		return err
	})
	one("lookup missing", func(int) error {
		if _, err := e.Lookup(ctx, meta.RootIno, "missing"); err != syscall.ENOENT {
			t.Errorf("lookup of a missing name: %v, want ENOENT", err)
		}
		return nil
	})
	one("lookup in a file", func(i int) error {
		if _, err := e.Lookup(ctx, inos[i], "x"); err != syscall.ENOTDIR {
			t.Errorf("lookup in a file: %v, want ENOTDIR", err)
		}
		return nil
	})
	one("getattr", func(i int) error {
		_, err := e.Getattr(ctx, inos[i])
		return err
	})
	one("open", func(i int) error {
		_, err := e.(meta.OpenTracker).Open(ctx, inos[i], meta.MayRead)
		return err
	})
	var ids [3]meta.SliceID
	cost("slice id", func(i int) (err error) {
		ids[i], err = e.NewSliceID(ctx)
		return err
	})
	// The attributes a write chunk reads were read before, and then those
	// it wrote: guessed, so one round trip (as for an fsync's commit).
	if n := cost("write chunk", func(i int) error {
		_, err := e.WriteChunk(ctx, inos[i], 0, meta.Slice{ID: ids[i], Size: 4096, Len: 4096})
		return err
	}); n != 1 {
		t.Errorf("write chunk: %d round trips, want 1", n)
	}
	if n := cost("append chunk", func(i int) error {
		_, err := e.WriteChunk(ctx, inos[i], 0, meta.Slice{ID: ids[i], Size: 4096, Len: 4096, Pos: 4096})
		return err
	}); n != 1 {
		t.Errorf("append chunk: %d round trips, want 1", n)
	}
	one("read chunk", func(i int) error { // its list from the chunk cache
		_, err := e.ReadChunk(ctx, inos[i], 0)
		return err
	})
	if n := cost("unlink", func(i int) error {
		_, err := e.Unlink(ctx, meta.RootIno, names[i])
		return err
	}); n != 1 {
		t.Errorf("unlink: %d round trips, want 1 (the entry and the attributes it names guessed from the lookups, then the guard, the writes and COMMIT)", n)
	}
}
