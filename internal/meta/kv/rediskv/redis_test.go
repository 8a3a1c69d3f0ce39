package rediskv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"shoal/internal/meta/kv"
	"shoal/internal/meta/kv/kvtest"
)

// redisBase returns SHOAL_TEST_REDIS, skipping the test when it is unset
// (or failing it under SHOAL_REQUIRE_SERVICES=1).
func redisBase(t testing.TB) string {
	t.Helper()
	base := os.Getenv("SHOAL_TEST_REDIS")
	if base == "" {
		if os.Getenv("SHOAL_REQUIRE_SERVICES") == "1" {
			t.Fatal("SHOAL_TEST_REDIS is not set but SHOAL_REQUIRE_SERVICES=1")
		}
		t.Skip("SHOAL_TEST_REDIS not set: skipping Redis tests (eval \"$(scripts/services.sh start)\")")
	}
	return base
}

// redisNamespaceURL returns SHOAL_TEST_REDIS with a fresh namespace whose
// keys are deleted when t ends.
func redisNamespaceURL(t testing.TB) string {
	t.Helper()
	base := redisBase(t)
	ns := fmt.Sprintf("kvtest_%x", rand.Uint64())
	t.Cleanup(func() { dropNamespace(t, base, ns) })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("SHOAL_TEST_REDIS: %v", err)
	}
	q := u.Query()
	q.Set("ns", ns)
	u.RawQuery = q.Encode()
	return u.String()
}

// dropNamespace deletes every key of namespace ns.
func dropNamespace(t testing.TB, base, ns string) {
	opts, err := redis.ParseURL(base)
	if err != nil {
		t.Errorf("SHOAL_TEST_REDIS: %v", err)
		return
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx := context.Background()
	iter := c.Scan(ctx, 0, newLayout(ns).pattern(), 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 1000 {
			c.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		c.Unlink(ctx, batch...)
	}
	if err := iter.Err(); err != nil {
		t.Errorf("drop namespace %s: %v", ns, err)
	}
}

func openRedis(t testing.TB) kv.Store {
	t.Helper()
	s, err := Open(context.Background(), redisNamespaceURL(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestRedisConformance(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kv.Store { return openRedis(t) })
}
