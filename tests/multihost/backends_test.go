package multihost

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"

	"shoal/internal/object/s3store"
	"shoal/internal/testutil"
)

// backend is one cell of the engine × store matrix: it formats a fresh
// volume for one test on servers that are already running.
type backend struct {
	name string
	// shared reports whether the engine is a network server (mounts on
	// different machines could share it); sqlite+file is not.
	shared bool
	// newVolume formats a fresh volume, isolated from every other test,
	// and registers its removal with t.Cleanup.
	newVolume func(t *testing.T) *testutil.Volume
}

// backends lists the matrix. The server-backed cells skip (or fail under
// SHOAL_REQUIRE_SERVICES=1) when their variables are unset.
func backends() []backend {
	return []backend{
		{name: "postgres+s3", shared: true, newVolume: func(t *testing.T) *testutil.Volume {
			return formatS3(t, pgSchemaURL(t, testutil.PGURL(t)), testutil.S3URL(t))
		}},
		{name: "redis+s3", shared: true, newVolume: func(t *testing.T) *testutil.Volume {
			return formatS3(t, redisNamespaceURL(t, testutil.RedisURL(t)), testutil.S3URL(t))
		}},
		{name: "sqlite+file", newVolume: func(t *testing.T) *testutil.Volume {
			return testutil.NewVolume(t)
		}},
	}
}

// eachBackend runs fn as one subtest per matrix cell.
func eachBackend(t *testing.T, fn func(t *testing.T, b backend)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { fn(t, b) })
	}
}

// uniqueName returns a name no other test (or earlier run) uses.
func uniqueName(kind string) string {
	return fmt.Sprintf("mh_%s_%x", kind, rand.Uint64())
}

// formatS3 formats a volume with metaURL's engine and its data under a
// fresh key prefix of the S3 bucket s3URL.
func formatS3(t *testing.T, metaURL, s3URL string) *testutil.Volume {
	t.Helper()
	bucket := s3Prefix(t, s3URL)
	return testutil.NewVolumeWith(t, testutil.VolumeConfig{
		MetaURL:    metaURL,
		FormatArgs: []string{"--storage", "s3", "--bucket", bucket},
	})
}

// pgSchemaURL creates a schema for one test on the server base names,
// dropped when the test ends, and returns base with search_path set to it.
func pgSchemaURL(t *testing.T, base string) string {
	t.Helper()
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("postgres %s: %v", redact(base), err)
	}
	schema := uniqueName("pg")
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

// redisNamespaceURL returns base with a fresh key namespace; the keys are
// deleted when the test ends.
func redisNamespaceURL(t *testing.T, base string) string {
	t.Helper()
	ns := uniqueName("redis")
	t.Cleanup(func() { deleteRedisKeys(t, base, ns) })
	return withQuery(t, base, "ns", ns)
}

// deleteRedisKeys removes every key of namespace ns (they share the hash
// tag "{ns}").
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
		keys = append(keys, iter.Val())
		if len(keys) == 1000 {
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

// s3Prefix returns the bucket URL s3URL with a fresh key prefix; the
// objects under it are deleted when the test ends.
func s3Prefix(t *testing.T, s3URL string) string {
	t.Helper()
	prefixed := strings.TrimSuffix(s3URL, "/") + "/" + uniqueName("s3")
	t.Cleanup(func() { deleteS3Prefix(t, prefixed) })
	return prefixed
}

// deleteS3Prefix deletes every object under the bucket URL's prefix.
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
