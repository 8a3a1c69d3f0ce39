package rediskv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestInvalidationsOfATurnCoalesce pins the Redis behaviour that rules
// out filling the cache with the values a commit wrote instead of
// reading them back (track.go, "This client's own commits"): broadcast
// invalidations are gathered per key for a whole event-loop turn and
// sent once, so three writes of one key, two in one turn (a MULTI/EXEC
// here; two clients' commands in one turn alike) and one in a later turn,
// are named by two invalidations, not three. A client that took the
// arrival of "its" invalidation as the end of its own write could not
// tell that another write came after it in the same turn.
func TestInvalidationsOfATurnCoalesce(t *testing.T) {
	opts, err := redis.ParseURL(redisBase(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	prefix := fmt.Sprintf("coalesce_%x:", rand.Uint64())
	k, other := prefix+"k", prefix+"other"
	sub := *opts
	sub.Protocol = 2
	sub.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		id, err := cn.ClientID(ctx).Result()
		if err != nil {
			return err
		}
		return cn.Do(ctx, "CLIENT", "TRACKING", "ON", "REDIRECT", id, "BCAST", "PREFIX", prefix).Err()
	}
	subc := redis.NewClient(&sub)
	defer subc.Close()
	ps := subc.Subscribe(ctx, invalidateChannel)
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the subscription
		t.Fatal(err)
	}
	w := redis.NewClient(opts)
	defer w.Close()
	defer w.Del(ctx, k, other)
	if _, err := w.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, k, "mine", 0)
		p.Set(ctx, other, "x", 0)
		p.Set(ctx, k, "theirs", 0) // later, in the same turn
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Set(ctx, k, "later", 0).Err(); err != nil { // a later turn
		t.Fatal(err)
	}
	// A PING sent now runs after both turns: its answer follows their
	// invalidations.
	if err := ps.Ping(ctx, "done"); err != nil {
		t.Fatal(err)
	}
	var named [][]string
	for {
		msg, err := ps.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := msg.(*redis.Pong); ok {
			break
		}
		if m, ok := msg.(*redis.Message); ok {
			keys := m.PayloadSlice
			if keys == nil {
				keys = []string{m.Payload}
			}
			named = append(named, keys)
		}
	}
	count := 0
	for _, keys := range named {
		count += len(slices.DeleteFunc(slices.Clone(keys), func(s string) bool { return s != k }))
	}
	if count != 2 || len(named) != 2 || !slices.Contains(named[0], other) {
		t.Fatalf("invalidations %q: want two naming %s once each, the first also %s", named, k, other)
	}
}
