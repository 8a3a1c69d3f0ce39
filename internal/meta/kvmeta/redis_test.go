package kvmeta_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"shoal/internal/meta"
	"shoal/internal/meta/kv/rediskv"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/meta/metatest"
)

// redisNamespace returns base with a fresh key namespace ("{ns}:" key
// prefix, see rediskv), whose keys are deleted when t ends.
func redisNamespace(t testing.TB, base string) string {
	t.Helper()
	ns := fmt.Sprintf("kvmeta_%x", rand.Uint64())
	t.Cleanup(func() {
		opts, err := redis.ParseURL(base)
		if err != nil {
			t.Errorf("SHOAL_TEST_REDIS: %v", err)
			return
		}
		c := redis.NewClient(opts)
		defer c.Close()
		ctx := context.Background()
		iter := c.Scan(ctx, 0, "{"+ns+"}:*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Unlink(ctx, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("drop namespace %s: %v", ns, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("SHOAL_TEST_REDIS: %v", err)
	}
	q := u.Query()
	q.Set("ns", ns)
	u.RawQuery = q.Encode()
	return u.String()
}

func TestRedis(t *testing.T) {
	t.Parallel() // network-bound: overlap with the other engines' tests
	base := serviceURL(t, "SHOAL_TEST_REDIS")
	metatest.Run(t, func(t *testing.T) meta.Engine { return openRedis(t, redisNamespace(t, base)) })
}

func TestRedisClients(t *testing.T) {
	t.Parallel() // network-bound: overlap with the other engines' tests
	base := serviceURL(t, "SHOAL_TEST_REDIS")
	metatest.RunClients(t, func(t *testing.T, n int) []meta.Engine {
		url := redisNamespace(t, base)
		engines := make([]meta.Engine, n)
		for i := range engines {
			engines[i] = openRedis(t, url)
		}
		return engines
	})
}

func TestRedisClock(t *testing.T) {
	t.Parallel() // network-bound: overlap with the other engines' tests
	base := serviceURL(t, "SHOAL_TEST_REDIS")
	metatest.RunClock(t, func(t *testing.T, skews []time.Duration) []meta.Engine {
		url := redisNamespace(t, base)
		engines := make([]meta.Engine, len(skews))
		for i, skew := range skews {
			engines[i] = openRedisOptions(t, url, kvmeta.Options{ClockSkew: skew})
		}
		return engines
	})
}

func openRedis(t *testing.T, url string) meta.Engine {
	return openRedisOptions(t, url, kvmeta.Options{})
}

func openRedisOptions(t testing.TB, url string, opts kvmeta.Options) meta.Engine {
	t.Helper()
	store, err := rediskv.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("open redis: %v", err)
	}
	return kvmeta.New(store, opts)
}
