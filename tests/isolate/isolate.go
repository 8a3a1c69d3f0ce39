// Package isolate gives each mounted test its own corner of the shared test
// servers: a PostgreSQL schema, a Redis key namespace, an S3 key prefix,
// each removed when the test ends. The multi-mount and VM-image suites
// share it; it lives under tests/ because it needs the S3 backend, which
// internal/testutil may not import (s3store's own tests import testutil).
package isolate

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/redis/go-redis/v9"

	"shoal/internal/object/s3store"
	"shoal/internal/testutil"
)

// Name returns a fresh identifier usable as a schema, namespace or prefix.
func Name(kind string) string { return fmt.Sprintf("t_%s_%x", kind, rand.Uint64()) }

// FormatS3 formats a volume with metaURL's engine and its data under a
// fresh key prefix of the S3 bucket s3URL, deleted when the test ends.
func FormatS3(t *testing.T, metaURL, s3URL string) *testutil.Volume {
	t.Helper()
	return testutil.NewVolumeWith(t, testutil.VolumeConfig{
		MetaURL:    metaURL,
		FormatArgs: []string{"--storage", "s3", "--bucket", S3Prefix(t, s3URL)},
	})
}

// PGSchemaURL creates a schema for one test on the server base names,
// dropped when the test ends, and returns base with search_path set to it.
func PGSchemaURL(t *testing.T, base string) string {
	t.Helper()
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("postgres %s: %v", redact(base), err)
	}
	schema := Name("pg")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		db.Close()
		t.Fatalf("create schema on %s: %v", redact(base), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Logf("drop schema %s: %v", schema, err)
		}
		db.Close()
	})
	return withQuery(t, base, "search_path", schema)
}

// RedisNamespaceURL returns base with a fresh key namespace; its keys
// (hash tag "{ns}") are deleted when the test ends.
func RedisNamespaceURL(t *testing.T, base string) string {
	t.Helper()
	ns := Name("redis")
	t.Cleanup(func() { deleteRedisKeys(t, base, ns) })
	return withQuery(t, base, "ns", ns)
}

func deleteRedisKeys(t *testing.T, base, ns string) {
	opts, err := redis.ParseURL(base)
	if err != nil {
		t.Logf("redis cleanup: %v", err)
		return
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, "{"+ns+"}*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		if keys = append(keys, iter.Val()); len(keys) == 1000 {
			c.Del(ctx, keys...)
			keys = keys[:0]
		}
	}
	if len(keys) > 0 {
		c.Del(ctx, keys...)
	}
	if err := iter.Err(); err != nil {
		t.Logf("redis cleanup of %s: %v", ns, err)
	}
}

// S3Prefix returns the bucket URL s3URL with a fresh key prefix; the
// objects under it are deleted when the test ends.
func S3Prefix(t *testing.T, s3URL string) string {
	t.Helper()
	prefixed := strings.TrimSuffix(s3URL, "/") + "/" + Name("s3")
	t.Cleanup(func() { deleteS3Prefix(t, prefixed) })
	return prefixed
}

func deleteS3Prefix(t *testing.T, bucketURL string) {
	cfg, err := s3store.ParseURL(bucketURL)
	if err != nil {
		t.Logf("s3 cleanup: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := s3store.New(ctx, cfg)
	if err != nil {
		t.Logf("s3 cleanup: %v", err)
		return
	}
	for {
		infos, err := st.List(ctx, "", "", 1000)
		if err != nil || len(infos) == 0 {
			return
		}
		for _, in := range infos {
			if err := st.Delete(ctx, in.Key); err != nil {
				t.Logf("s3 cleanup: %v", err)
				return
			}
		}
	}
}

// withQuery sets one query parameter of a URL.
func withQuery(t *testing.T, raw, key, value string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("bad URL %s: %v", redact(raw), err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// redact hides a URL's password for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
