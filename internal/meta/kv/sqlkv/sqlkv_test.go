package sqlkv

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

func TestOpenURLErrors(t *testing.T) {
	ctx := context.Background()
	cases := []struct{ url, want string }{
		{"sqlite://", "needs a file path"},
		{"sqlite:///tmp/dir/", "needs a file path"},
		{"sqlite:///tmp/x.db?cache=shared", "unknown parameters"},
		{"sqlite:///tmp/x.db?retry_timeout=soon", "retry_timeout"},
		{"mysql://u@h/db", `unknown META-URL scheme "mysql"`},
		{"postgres://u:secret@h:99999999/db", "malformed"},
		{"://nope", "malformed META-URL"},
		{"sqlite:///nonexistent-dir/x/meta.db", "does its directory exist"},
	}
	for _, c := range cases {
		s, err := Open(ctx, c.url)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded, want error containing %q", c.url, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%q) = %v, want error containing %q", c.url, err, c.want)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q) error shows the password: %v", c.url, err)
		}
	}
}

func TestSQLitePaths(t *testing.T) {
	cases := map[string]string{
		"sqlite:///abs/path/meta.db": "/abs/path/meta.db",
		"sqlite://rel/meta.db":       "rel/meta.db",
		"sqlite://meta.db":           "meta.db",
		"sqlite:meta.db":             "meta.db",
		"sqlite3:///a%3Fb.db":        "/a?b.db",
	}
	for raw, want := range cases {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		d, err := newSQLite(u)
		if err != nil || d.path != want {
			t.Errorf("%s: path %v, %v; want %q", raw, d, err, want)
		}
	}
}

func TestSQLiteReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	ctx := context.Background()
	s, err := Open(ctx, "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Txn(ctx, func(tx kv.Tx) error { tx.Set([]byte("k"), []byte("v")); return nil }); err != nil {
		t.Fatal(err)
	}
	if s.Name() != "sqlite:"+path {
		t.Errorf("Name() = %q", s.Name())
	}
	s.Close()
	s, err = Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v := mustGet(t, s, []byte("k")); string(v) != "v" {
		t.Fatalf("after reopen k = %q, want v", v)
	}
}

func mustGet(t *testing.T, s kv.Store, k []byte) []byte {
	t.Helper()
	var v []byte
	err := s.View(context.Background(), func(tx kv.Tx) (err error) {
		v, err = tx.Get(k)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// testNewerSchemaRefused bumps the stored schema version past the binary's
// and checks that Open refuses the database.
func testNewerSchemaRefused(t *testing.T, rawURL string) {
	ctx := context.Background()
	s, err := Open(ctx, rawURL)
	if err != nil {
		t.Fatal(err)
	}
	st := s.(*Store)
	c, err := st.pool.begin(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	err = c.execSQL(st.dialect.rebind("UPDATE shoal_meta SET value = ? WHERE name = 'schema_version'"), schemaVersion+1)
	if err == nil {
		err = c.commit()
	}
	c.rollback()
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(ctx, rawURL)
	if err == nil {
		s.Close()
		t.Fatal("Open of a newer schema succeeded")
	}
	if !errors.Is(err, meta.ErrNewerFormat) || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open of a newer schema: %v, want meta.ErrNewerFormat", err)
	}
}

func TestSQLiteNewerSchemaRefused(t *testing.T) {
	testNewerSchemaRefused(t, "sqlite://"+filepath.Join(t.TempDir(), "meta.db"))
}

// TestSQLiteTwoStoresOneFile is two processes' worth of writers on one
// file: their write connections collide on SQLite's lock, and the retry
// loop must still lose no increment.
func TestSQLiteTwoStoresOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	ctx := context.Background()
	var stores []kv.Store
	for i := 0; i < 2; i++ {
		s, err := Open(ctx, "sqlite://"+path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores = append(stores, s)
	}
	ctr := []byte("counter")
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if err := stores[w%2].Txn(ctx, increment(ctr)); err != nil {
					t.Errorf("increment: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if v := mustGet(t, stores[0], ctr); binary.BigEndian.Uint64(v) != 300 {
		t.Fatalf("counter = %d, want 300", binary.BigEndian.Uint64(v))
	}
}

func increment(k []byte) func(kv.Tx) error {
	return func(tx kv.Tx) error {
		v, err := tx.Get(k)
		var n uint64
		if len(v) == 8 {
			n = binary.BigEndian.Uint64(v)
		}
		tx.Set(k, binary.BigEndian.AppendUint64(nil, n+1))
		return err
	}
}

// TestSQLiteLockHeldGivesUp holds the write lock from another connection:
// a Txn must give up after its retry bound with meta.ErrUnavailable.
func TestSQLiteLockHeldGivesUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	ctx := context.Background()
	s, err := Open(ctx, "sqlite://"+path+"?retry_timeout=300ms")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := sql.Open("sqlite3", "file:"+path+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	hold, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback()
	start := time.Now()
	err = s.Txn(ctx, increment([]byte("k")))
	if !errors.Is(err, meta.ErrUnavailable) || !errors.Is(err, kv.ErrConflict) {
		t.Fatalf("Txn under a held lock: %v, want meta.ErrUnavailable and kv.ErrConflict", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("gave up after %v, want about busy_timeout + retry_timeout", d)
	}
	// Views still work beside the held write lock (WAL).
	if v := mustGet(t, s, []byte("k")); v != nil {
		t.Errorf("k = %q, want absent", v)
	}
}

func TestCanceledContext(t *testing.T) {
	s := openSQLite(t)
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Txn(ctx, increment([]byte("k")))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Txn with canceled ctx: %v, want context.Canceled", err)
	}
}

func TestFnConflictRetried(t *testing.T) {
	s := openSQLite(t)
	defer s.Close()
	calls := 0
	err := s.Txn(context.Background(), func(tx kv.Tx) error {
		calls++
		tx.Set([]byte("k"), []byte{byte(calls)})
		if calls < 3 {
			return kv.ErrConflict
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("Txn = %v after %d calls, want nil after 3", err, calls)
	}
	if v := mustGet(t, s, []byte("k")); len(v) != 1 || v[0] != 3 {
		t.Fatalf("k = %v, want the third run's write", v)
	}
}

func TestSQLiteFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := Open(context.Background(), "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("database mode %v, want 0600", fi.Mode().Perm())
	}
}

// TestSQLitePanicFreesWriter checks that a panicking fn does not leave the
// single writer connection inside a transaction.
func TestSQLitePanicFreesWriter(t *testing.T) {
	s := openSQLite(t)
	defer s.Close()
	func() {
		defer func() { _ = recover() }()
		_ = s.Txn(context.Background(), func(tx kv.Tx) error {
			tx.Set([]byte("k"), []byte("v"))
			panic("boom")
		})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Txn(ctx, increment([]byte("k2"))); err != nil {
		t.Fatalf("Txn after a panicking one: %v", err)
	}
	if v := mustGet(t, s, []byte("k")); v != nil {
		t.Fatalf("the panicking transaction's write is visible: %q", v)
	}
}
