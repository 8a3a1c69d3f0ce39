package rediskv

import (
	"context"
	"net"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"shoal/internal/meta/kv"
)

// roundTrips counts the commands and pipelines a client sends.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { r.n.Add(1); return next(ctx, cmd) }
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { r.n.Add(1); return next(ctx, cmds) }
}

func setKey(t *testing.T, s kv.Store, key, value string) {
	t.Helper()
	err := s.Txn(context.Background(), func(tx kv.Tx) error {
		if value == "" {
			tx.Delete([]byte(key))
		} else {
			tx.Set([]byte(key), []byte(value))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func getKey(t *testing.T, s kv.Store, key string) string {
	t.Helper()
	var v []byte
	if err := s.View(context.Background(), func(tx kv.Tx) (err error) { v, err = tx.Get([]byte(key)); return err }); err != nil {
		t.Fatal(err)
	}
	return string(v)
}

// TestSeededWriteOneRoundTrip: a write transaction whose first read round
// this client has just read (as a lookup does before a create) makes one
// round trip, its commit.
func TestSeededWriteOneRoundTrip(t *testing.T) {
	s := openRedis(t)
	defer s.Close()
	ctx := context.Background()
	setKey(t, s, "seed-a", "1")
	keys := [][]byte{[]byte("seed-a"), []byte("seed-absent")}
	if err := s.View(ctx, func(tx kv.Tx) error { return tx.(kv.Prefetcher).Prefetch(keys...) }); err != nil {
		t.Fatal(err)
	}
	var rt roundTrips
	s.(*Store).client.AddHook(&rt)
	err := s.Txn(ctx, func(tx kv.Tx) error {
		if err := tx.(kv.Prefetcher).Prefetch(keys...); err != nil {
			return err
		}
		a, _ := tx.Get(keys[0])
		tx.Set([]byte("seed-b"), a)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := rt.n.Load(); n != 1 {
		t.Errorf("the write transaction made %d round trips, want 1 (its commit)", n)
	}
	if got := getKey(t, s, "seed-b"); got != "1" {
		t.Fatalf("seed-b = %q, want 1", got)
	}
}

// TestStaleSeedsRetried: another client changes what this one read just
// before its write transaction. Whatever the transaction concluded from
// the older values, with writes or without (an error), must not stand:
// it runs again on the current ones.
func TestStaleSeedsRetried(t *testing.T) {
	a, b := twoStores(t)
	ctx := context.Background()
	// create: EEXIST if the name exists, else write it.
	create := func(name string) (runs int, err error) {
		err = a.Txn(ctx, func(tx kv.Tx) error {
			runs++
			v, err := tx.Get([]byte(name))
			if err != nil {
				return err
			}
			if v != nil {
				return syscall.EEXIST
			}
			tx.Set([]byte(name), []byte("a"))
			return nil
		})
		return runs, err
	}
	t.Run("write", func(t *testing.T) { // seeded absent, now present
		getKey(t, a, "stale-1")
		setKey(t, b, "stale-1", "b")
		if runs, err := create("stale-1"); err != syscall.EEXIST || runs != 2 {
			t.Fatalf("create over a name another client made: %v after %d runs, want EEXIST after 2", err, runs)
		}
		if got := getKey(t, b, "stale-1"); got != "b" {
			t.Fatalf("value %q, want b", got)
		}
	})
	t.Run("error", func(t *testing.T) { // seeded present, now gone
		setKey(t, a, "stale-2", "a0")
		getKey(t, a, "stale-2")
		setKey(t, b, "stale-2", "")
		if runs, err := create("stale-2"); err != nil || runs != 2 {
			t.Fatalf("create of a name another client removed: %v after %d runs, want success after 2", err, runs)
		}
	})
	t.Run("value", func(t *testing.T) { // a read-modify-write of a stale value
		setKey(t, a, "stale-3", "1")
		getKey(t, a, "stale-3")
		setKey(t, b, "stale-3", "5")
		err := a.Txn(ctx, func(tx kv.Tx) error {
			v, err := tx.Get([]byte("stale-3"))
			tx.Set([]byte("stale-3"), append(v, 'x'))
			return err
		})
		if got := getKey(t, b, "stale-3"); err != nil || got != "5x" {
			t.Fatalf("value %q, %v; want 5x", got, err)
		}
	})
}

// twoStores opens two Stores (two clients) on one fresh namespace, closed
// when the test ends.
func twoStores(t *testing.T) (a, b kv.Store) {
	url := redisNamespaceURL(t)
	for _, s := range []*kv.Store{&a, &b} {
		st, err := Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		*s = st
	}
	return a, b
}
