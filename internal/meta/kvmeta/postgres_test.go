package kvmeta_test

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"shoal/internal/meta"
	"shoal/internal/meta/metatest"
)

// serviceURL returns the named environment variable, skipping the test when
// it is unset unless SHOAL_REQUIRE_SERVICES=1.
func serviceURL(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if os.Getenv("SHOAL_REQUIRE_SERVICES") == "1" {
			t.Fatalf("%s is not set but SHOAL_REQUIRE_SERVICES=1", name)
		}
		t.Skipf("%s not set: skipping (eval \"$(scripts/services.sh start)\")", name)
	}
	return v
}

// pgSchema makes a schema for one engine, dropped when t ends, and returns
// the server URL with search_path set to it.
func pgSchema(t *testing.T, base string) string {
	t.Helper()
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("SHOAL_TEST_PG: %v", err)
	}
	schema := fmt.Sprintf("kvmeta_%x", rand.Uint64())
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		admin.Close()
		t.Fatalf("create schema: %v", err)
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

func TestPostgres(t *testing.T) {
	t.Parallel() // network-bound: overlap with the other engines' tests
	base := serviceURL(t, "SHOAL_TEST_PG")
	metatest.Run(t, func(t *testing.T) meta.Engine { return openSQL(t, pgSchema(t, base)) })
}

func TestPostgresClients(t *testing.T) {
	t.Parallel() // network-bound: overlap with the other engines' tests
	base := serviceURL(t, "SHOAL_TEST_PG")
	metatest.RunClients(t, func(t *testing.T, n int) []meta.Engine {
		return openSQLClients(t, pgSchema(t, base), n)
	})
}

func TestPostgresClock(t *testing.T) {
	t.Parallel() // network-bound: overlap with the other engines' tests
	base := serviceURL(t, "SHOAL_TEST_PG")
	metatest.RunClock(t, func(t *testing.T, skews []time.Duration) []meta.Engine {
		return openSkewedSQL(t, pgSchema(t, base), skews)
	})
}
