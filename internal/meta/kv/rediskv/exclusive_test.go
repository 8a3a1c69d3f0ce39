package rediskv

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"shoal/internal/meta/kv"
)

// TestRedisExclusiveFreezeLost removes an Exclusive's freeze while its fn
// runs (as a TTL that ran out would) and lets another store write: the
// Exclusive must then fail without writing anything.
func TestRedisExclusiveFreezeLost(t *testing.T) {
	url := redisNamespaceURL(t)
	ctx := context.Background()
	s, other := openURL(t, url), openURL(t, url)
	err := s.(*Store).Exclusive(ctx, func(tx kv.Tx) error {
		if _, err := tx.Get([]byte("k")); err != nil {
			return err
		}
		tx.Set([]byte("exclusive"), []byte("x"))
		if err := s.(*Store).client.Del(ctx, s.(*Store).keys.freeze()).Err(); err != nil {
			return err
		}
		return other.Txn(ctx, increment([]byte("k")))
	})
	if !errors.Is(err, errFreezeLost) {
		t.Fatalf("Exclusive whose freeze was lost: %v, want errFreezeLost", err)
	}
	if v := getRedis(t, s, []byte("exclusive")); v != nil {
		t.Fatalf("the refused Exclusive's write is visible: %q", v)
	}
	if v := getRedis(t, s, []byte("k")); len(v) != 8 || binary.BigEndian.Uint64(v) != 1 {
		t.Fatalf("k = %x, want 1", v)
	}
}

// TestRedisDeadFreezeLapses leaves a freeze as an Exclusive whose process
// died would, with a short TTL: a writer must wait for it to lapse, then
// commit; a View must not wait.
func TestRedisDeadFreezeLapses(t *testing.T) {
	s := openURL(t, redisNamespaceURL(t))
	st := s.(*Store)
	ctx := context.Background()
	const ttl = 1500 * time.Millisecond
	if err := st.client.Set(ctx, st.keys.freeze(), "dead", ttl).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if v := getRedis(t, s, []byte("k")); v != nil || time.Since(start) > ttl/2 {
		t.Fatalf("View under a freeze: %q after %v", v, time.Since(start))
	}
	if err := s.Txn(ctx, increment([]byte("k"))); err != nil {
		t.Fatalf("Txn under a dead freeze: %v", err)
	}
	if d := time.Since(start); d < ttl-200*time.Millisecond || d > ttl+2*time.Second {
		t.Errorf("Txn committed after %v, want just after the freeze's %v TTL", d, ttl)
	}
	if v := getRedis(t, s, []byte("k")); len(v) != 8 || binary.BigEndian.Uint64(v) != 1 {
		t.Fatalf("k = %x, want 1", v)
	}
}

func openURL(t *testing.T, url string) kv.Store {
	t.Helper()
	s, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func getRedis(t *testing.T, s kv.Store, k []byte) []byte {
	t.Helper()
	var v []byte
	err := s.View(context.Background(), func(tx kv.Tx) (err error) { v, err = tx.Get(k); return err })
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRedisExclusiveOutlastsTTL runs an Exclusive four times as long as
// its freeze's TTL: the refresh must keep the freeze, and so hold a writer
// of another store off, until the commit.
func TestRedisExclusiveOutlastsTTL(t *testing.T) {
	url := redisNamespaceURL(t)
	ctx := context.Background()
	s, other := openURL(t, url), openURL(t, url)
	s.(*Store).freezeTTL = 600 * time.Millisecond
	done := make(chan error, 1)
	var when time.Time
	runs := 0
	err := s.(*Store).Exclusive(ctx, func(tx kv.Tx) error {
		if runs++; runs > 1 {
			return errors.New("fn ran again")
		}
		go func() {
			err := other.Txn(ctx, increment([]byte("k")))
			when = time.Now()
			done <- err
		}()
		time.Sleep(2400 * time.Millisecond)
		tx.Set([]byte("k"), binary.BigEndian.AppendUint64(nil, 100))
		return nil
	})
	committed := time.Now()
	if err != nil {
		t.Fatalf("Exclusive longer than its freeze's TTL: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("writer beside the Exclusive: %v", err)
	}
	if when.Before(committed) {
		t.Fatalf("writer committed %v before the Exclusive", committed.Sub(when))
	}
	if v := getRedis(t, s, []byte("k")); len(v) != 8 || binary.BigEndian.Uint64(v) != 101 {
		t.Fatalf("k = %x, want 101 (the Exclusive's 100, then the writer's increment)", v)
	}
}
