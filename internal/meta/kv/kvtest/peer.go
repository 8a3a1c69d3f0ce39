package kvtest

import (
	"context"
	"sync"
	"testing"

	"shoal/internal/meta/kv"
)

// Option changes how Run builds stores.
type Option func(*config)

type config struct {
	// peer opens a second store on s's database, closed when t ends.
	peer func(t *testing.T, s kv.Store) kv.Store
}

// WithPeer tells Run how to open a second store on the database or
// namespace of s, standing in for another machine mounting the same
// volume; the peer must be closed when t ends (t.Cleanup). Without it the
// tests that want a peer use s itself, which for an embedded store (memkv)
// is the whole truth.
func WithPeer(peer func(t *testing.T, s kv.Store) kv.Store) Option {
	return func(c *config) { c.peer = peer }
}

// RunURL runs the suite on stores open opens from URLs: newURL names a
// fresh, empty database (or namespace) for each subtest, and a peer store
// is open on the same URL.
func RunURL(t *testing.T, open func(ctx context.Context, url string) (kv.Store, error), newURL func(t *testing.T) string) {
	var mu sync.Mutex
	urls := map[kv.Store]string{}
	openURL := func(t *testing.T, url string) kv.Store {
		t.Helper()
		s, err := open(context.Background(), url)
		if err != nil {
			t.Fatalf("open %s: %v", url, err)
		}
		mu.Lock()
		urls[s] = url
		mu.Unlock()
		return s
	}
	newStore := func(t *testing.T) kv.Store { return openURL(t, newURL(t)) }
	peer := func(t *testing.T, s kv.Store) kv.Store {
		mu.Lock()
		url := urls[s]
		mu.Unlock()
		p := openURL(t, url)
		t.Cleanup(func() { _ = p.Close() })
		return p
	}
	Run(t, newStore, WithPeer(peer))
}

// peerOf returns c's peer of s, or s itself.
func (c *config) peerOf(t *testing.T, s kv.Store) kv.Store {
	if c.peer == nil {
		return s
	}
	return c.peer(t, s)
}
