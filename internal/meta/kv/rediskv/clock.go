package rediskv

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"shoal/internal/meta/kv"
)

var _ kv.Clock = (*Store)(nil)

// clockScript returns TIME of the node that serves the script's key: in a
// cluster, the node holding the volume's namespace, whose clock is the one
// every client of the volume reads.
var clockScript = redis.NewScript("return redis.call('TIME')")

// Now implements kv.Clock: the Redis server's TIME, retried like a View.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if s.closed.Load() {
		return time.Time{}, errClosed
	}
	var now time.Time
	err := kv.Retry(ctx, "rediskv: "+s.name, s.retryTimeout, func() (kv.Class, error) {
		var err error
		now, err = s.serverTime(ctx)
		if err != nil {
			return classify(err), s.wrap("time", err)
		}
		return kv.Fatal, nil
	})
	return now, err
}

func (s *Store) serverTime(ctx context.Context) (time.Time, error) {
	if !s.cluster {
		return s.client.Time(ctx).Result()
	}
	v, err := clockScript.Run(ctx, s.client, []string{s.keys.route()}).Int64Slice()
	if err != nil {
		return time.Time{}, err
	}
	if len(v) != 2 {
		return time.Time{}, fmt.Errorf("TIME answered %v", v)
	}
	return time.Unix(v[0], v[1]*1000), nil
}
