package sqlkv

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
	"shoal/internal/meta/kv/kvtest"
)

// pgBase returns SHOAL_TEST_PG, skipping the test when it is unset (or
// failing it under SHOAL_REQUIRE_SERVICES=1).
func pgBase(t testing.TB) string {
	t.Helper()
	base := os.Getenv("SHOAL_TEST_PG")
	if base == "" {
		if os.Getenv("SHOAL_REQUIRE_SERVICES") == "1" {
			t.Fatal("SHOAL_TEST_PG is not set but SHOAL_REQUIRE_SERVICES=1")
		}
		t.Skip("SHOAL_TEST_PG not set: skipping PostgreSQL tests (eval \"$(scripts/services.sh start)\")")
	}
	return base
}

// pgSchemaURL creates a fresh schema for t, dropped when t ends, and
// returns SHOAL_TEST_PG with search_path set to it.
func pgSchemaURL(t testing.TB) string {
	t.Helper()
	base := pgBase(t)
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("SHOAL_TEST_PG: %v", err)
	}
	schema := fmt.Sprintf("kvtest_%x", rand.Uint64())
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		admin.Close()
		t.Fatalf("create schema on SHOAL_TEST_PG: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		admin.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("SHOAL_TEST_PG: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func openPG(t testing.TB) kv.Store {
	t.Helper()
	s, err := Open(context.Background(), pgSchemaURL(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// TestPostgresConformance runs the suite with a second store (its own
// pool) on the same schema as the peer.
func TestPostgresConformance(t *testing.T) {
	kvtest.RunURL(t, Open, func(t *testing.T) string { return pgSchemaURL(t) })
}

func TestPostgresNewerSchemaRefused(t *testing.T) {
	testNewerSchemaRefused(t, pgSchemaURL(t))
}

func TestPostgresUnreachable(t *testing.T) {
	_, err := Open(context.Background(), "postgres://u:p@127.0.0.1:1/db?connect_timeout=2")
	if err == nil || !errors.Is(err, meta.ErrUnavailable) || !strings.Contains(err.Error(), "is the server running at 127.0.0.1:1") {
		t.Fatalf("Open of a closed port: %v, want ErrUnavailable asking whether the server runs", err)
	}
}

func TestPostgresDatabaseMissing(t *testing.T) {
	u, err := url.Parse(pgBase(t))
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/no_such_db_for_shoal"
	_, err = Open(context.Background(), u.String())
	if err == nil || !strings.Contains(err.Error(), `database "no_such_db_for_shoal" does not exist`) {
		t.Fatalf("Open of a missing database: %v", err)
	}
}

// proxiedPG opens a store through a kvtest.Proxy in front of the test
// server, with the given retry bound.
func proxiedPG(t *testing.T, retry string) (kv.Store, *kvtest.Proxy) {
	u, err := url.Parse(pgSchemaURL(t))
	if err != nil {
		t.Fatal(err)
	}
	p := kvtest.NewProxy(t, u.Host)
	u.Host = p.Addr()
	q := u.Query()
	q.Set("retry_timeout", retry)
	u.RawQuery = q.Encode()
	s, err := Open(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, p
}

// TestPostgresServerGoneThenBack drops every connection and refuses new
// ones for a while: a Txn started meanwhile waits and then succeeds; one
// whose bound runs out fails with meta.ErrUnavailable.
func TestPostgresServerGoneThenBack(t *testing.T) {
	s, p := proxiedPG(t, "10s")
	ctx := context.Background()
	k := []byte("counter")
	if err := s.Txn(ctx, increment(k)); err != nil {
		t.Fatal(err)
	}
	p.Down()
	go func() {
		time.Sleep(700 * time.Millisecond)
		p.Up()
	}()
	start := time.Now()
	if err := s.Txn(ctx, increment(k)); err != nil {
		t.Fatalf("Txn across an outage: %v", err)
	}
	if time.Since(start) < 500*time.Millisecond {
		t.Errorf("Txn finished in %v, during the outage", time.Since(start))
	}
	if v := mustGet(t, s, k); binary.BigEndian.Uint64(v) != 2 {
		t.Fatalf("counter = %d, want 2", binary.BigEndian.Uint64(v))
	}
}

func TestPostgresUnavailableBound(t *testing.T) {
	s, p := proxiedPG(t, "1s")
	p.Down()
	start := time.Now()
	err := s.View(context.Background(), func(tx kv.Tx) error { _, err := tx.Get([]byte("k")); return err })
	if !errors.Is(err, meta.ErrUnavailable) {
		t.Fatalf("View with the server gone: %v, want meta.ErrUnavailable", err)
	}
	if d := time.Since(start); d < 500*time.Millisecond || d > 10*time.Second {
		t.Errorf("gave up after %v, want about the 1s bound", d)
	}
	p.Up()
	if err := s.Txn(context.Background(), increment([]byte("k"))); err != nil {
		t.Fatalf("Txn after the server came back: %v", err)
	}
}

// TestPostgresBackendsTerminated kills the server processes of the store's
// pooled connections (as a server restart does) between transactions and
// in the middle of one: the next transactions must succeed.
func TestPostgresBackendsTerminated(t *testing.T) {
	u, err := url.Parse(pgSchemaURL(t))
	if err != nil {
		t.Fatal(err)
	}
	app := fmt.Sprintf("kvtest_term_%x", rand.Uint32())
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	ctx := context.Background()
	s, err := Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	admin, err := sql.Open("pgx", pgBase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	terminate := func() {
		_, err := admin.Exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", app)
		if err != nil {
			t.Fatalf("terminate: %v", err)
		}
	}
	k := []byte("counter")
	if err := s.Txn(ctx, increment(k)); err != nil {
		t.Fatal(err)
	}
	terminate()
	if err := s.Txn(ctx, increment(k)); err != nil {
		t.Fatalf("Txn after the backends were terminated: %v", err)
	}
	// A transaction that only writes sends BEGIN, its writes and COMMIT
	// at once (pgpool.go): refused at BEGIN, it surely did not commit,
	// and is retried.
	terminate()
	if err := s.Txn(ctx, func(tx kv.Tx) error { tx.Set([]byte("blind"), []byte("w")); return nil }); err != nil {
		t.Fatalf("write-only Txn after the backends were terminated: %v", err)
	}
	runs := 0
	err = s.Txn(ctx, func(tx kv.Tx) error {
		runs++
		if runs == 1 {
			if _, err := tx.Get(k); err != nil {
				return err
			}
			terminate() // the connection dies inside the transaction
		}
		return increment(k)(tx)
	})
	if err != nil || runs < 2 {
		t.Fatalf("Txn with its connection terminated: %v after %d runs", err, runs)
	}
	if v := mustGet(t, s, k); binary.BigEndian.Uint64(v) != 3 {
		t.Fatalf("counter = %d, want 3", binary.BigEndian.Uint64(v))
	}
}

// TestPostgresDisjointNoConflict runs two transactions on disjoint keys
// of a small table, each reading two keys at once (GetMany) and writing
// and deleting, interleaved so that a lock on more than the keys read
// (a whole-table or heap-page predicate lock, from a sequential or bitmap
// scan) makes one fail with a serialization failure: each must commit at
// its first run.
func TestPostgresDisjointNoConflict(t *testing.T) {
	s := openPG(t)
	defer s.Close()
	ctx := context.Background()
	if err := s.Txn(ctx, func(tx kv.Tx) error {
		for _, k := range []string{"a1", "a2", "a3", "b1", "b2", "b3"} {
			tx.Set([]byte(k), []byte("v"))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Statistics of a small table, as autovacuum gathers them: the
	// planner then prefers a sequential scan, unless told otherwise.
	if err := s.Txn(ctx, func(ktx kv.Tx) error { return ktx.(*tx).c.execSQL("ANALYZE shoal_kv") }); err != nil {
		t.Fatal(err)
	}
	read1, read2, commit1 := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var runs1, runs2 int
	side := func(p string, runs *int, first bool) func(kv.Tx) error {
		return func(tx kv.Tx) error {
			*runs++
			if *runs == 1 && !first {
				<-read1
			}
			if _, err := kv.GetMany(tx, [][]byte{[]byte(p + "1"), []byte(p + "2")}); err != nil {
				return err
			}
			if *runs == 1 {
				if first {
					close(read1)
					<-read2
				} else {
					close(read2)
					<-commit1
				}
			}
			tx.Set([]byte(p+"1"), []byte("w"))
			tx.Delete([]byte(p + "3"))
			return nil
		}
	}
	errs := make(chan error, 1)
	go func() { errs <- s.Txn(ctx, side("b", &runs2, false)) }()
	err := s.Txn(ctx, side("a", &runs1, true))
	close(commit1)
	if err2 := <-errs; err != nil || err2 != nil {
		t.Fatalf("Txns: %v, %v", err, err2)
	}
	if runs1 != 1 || runs2 != 1 {
		t.Errorf("transactions on disjoint keys ran %d and %d times, want once each (a false serialization conflict)", runs1, runs2)
	}
}

// TestPostgresImplicitSerializable checks the transaction a statement sent
// outside BEGIN runs in (GetOne, ReadFollow): SERIALIZABLE READ ONLY, as
// a View's, even when the META-URL asks for other session defaults.
func TestPostgresImplicitSerializable(t *testing.T) {
	u, err := url.Parse(pgSchemaURL(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("default_transaction_isolation", "read committed")
	q.Set("default_transaction_read_only", "off")
	u.RawQuery = q.Encode()
	s, err := Open(context.Background(), u.String())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	var level, readOnly string
	err = s.(*Store).pool.(*pgPool).db.QueryRow(context.Background(),
		"SELECT current_setting('transaction_isolation'), current_setting('transaction_read_only')").Scan(&level, &readOnly)
	if err != nil {
		t.Fatal(err)
	}
	if level != "serializable" || readOnly != "on" {
		t.Errorf("a statement alone runs in a %s transaction, read only %s; want serializable, on", level, readOnly)
	}
	// Txn still writes, and GetOne and ReadFollow read what it wrote.
	if err := s.Txn(context.Background(), func(tx kv.Tx) error { tx.Set([]byte("k"), []byte("v")); return nil }); err != nil {
		t.Fatalf("Txn: %v", err)
	}
	if v, err := s.(kv.PointReader).GetOne(context.Background(), []byte("k")); err != nil || string(v) != "v" {
		t.Errorf("GetOne: %q, %v; want v", v, err)
	}
	if vals, _, _, _, err := s.(kv.FollowReader).ReadFollow(context.Background(), nil, []byte("k")); err != nil || string(vals[0]) != "v" {
		t.Errorf("ReadFollow: %q, %v; want v", vals, err)
	}
}
