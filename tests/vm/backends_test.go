package vm

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

// netBackend formats a volume on network servers, reached through relays
// on the lab bridge (relay), so that mounts in the lab's namespaces can
// use it.
type netBackend struct {
	name      string
	newVolume func(t *testing.T) *testutil.Volume
}

// networkBackends are the engine × store cells of a multi-host setup.
// They skip (or fail under SHOAL_REQUIRE_SERVICES=1) without the servers.
func networkBackends() []netBackend {
	return []netBackend{
		{"postgres+s3", func(t *testing.T) *testutil.Volume {
			return formatS3(t, pgSchemaURL(t, relayed(t, testutil.PGURL(t))), relayed(t, testutil.S3URL(t)))
		}},
		{"redis+s3", func(t *testing.T) *testutil.Volume {
			return formatS3(t, redisNamespaceURL(t, relayed(t, testutil.RedisURL(t))), relayed(t, testutil.S3URL(t)))
		}},
	}
}

// relayed returns raw with its host replaced by a relay to it on the
// lab bridge.
func relayed(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("bad service URL: %v", err)
	}
	u.Host = relay(t, u.Host)
	return u.String()
}

func uniqueName(kind string) string { return fmt.Sprintf("vm_%s_%x", kind, rand.Uint64()) }

// formatS3 formats a volume with metaURL's engine and its data under a
// fresh key prefix of the bucket s3URL, deleted when the test ends.
func formatS3(t *testing.T, metaURL, s3URL string) *testutil.Volume {
	t.Helper()
	bucket := strings.TrimSuffix(s3URL, "/") + "/" + uniqueName("s3")
	t.Cleanup(func() { deleteS3Prefix(t, bucket) })
	return testutil.NewVolumeWith(t, testutil.VolumeConfig{
		MetaURL:    metaURL,
		FormatArgs: []string{"--storage", "s3", "--bucket", bucket},
	})
}

// pgSchemaURL creates a schema for the test (dropped at its end) and
// returns base with search_path set to it.
func pgSchemaURL(t *testing.T, base string) string {
	t.Helper()
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("postgres: %v", err)
	}
	schema := uniqueName("pg")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		db.Close()
		t.Fatalf("create schema: %v", err)
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

// redisNamespaceURL returns base with a fresh key namespace whose keys
// (hash tag "{ns}") are deleted when the test ends.
func redisNamespaceURL(t *testing.T, base string) string {
	t.Helper()
	ns := uniqueName("redis")
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
	for iter.Next(ctx) {
		c.Del(ctx, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Logf("redis cleanup of %s: %v", ns, err)
	}
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

func withQuery(t *testing.T, raw, key, value string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("bad URL: %v", err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}
