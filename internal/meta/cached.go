package meta

import (
	"context"
	"sync"
	"time"
)

// Cached lets an engine answer a read from a cache that its server
// invalidates (a Redis mount's tracked values), and reports how old such
// an answer is. A mount passes one in the context of the reads whose
// answers only feed the kernel's timed caches (a lookup, a getattr),
// never under --strict, and never for an open, which must see the last
// close anywhere. An engine that answers from its cache records the
// instant the answer was current, no more than a fraction of a second
// ago; the caller shortens the kernel's timeouts by the answer's age, so
// that what the kernel shows stays within the timeouts of a fresh read.
// An engine without such a cache ignores it: At stays zero.
type Cached struct {
	mu sync.Mutex
	at time.Time
}

type cachedKey struct{}

// WithCached returns a context whose reads may be answered from an
// invalidated cache, reporting to c.
func WithCached(ctx context.Context, c *Cached) context.Context {
	return context.WithValue(ctx, cachedKey{}, c)
}

// CachedOf returns the context's Cached, or nil: then every read must be
// answered by the engine's server.
func CachedOf(ctx context.Context) *Cached {
	c, _ := ctx.Value(cachedKey{}).(*Cached)
	return c
}

// Served records that an answer came from the cache and was current at
// at; of several, the oldest is kept.
func (c *Cached) Served(at time.Time) {
	c.mu.Lock()
	if c.at.IsZero() || at.Before(c.at) {
		c.at = at
	}
	c.mu.Unlock()
}

// At returns the instant the oldest cached answer was current, or the
// zero time if every answer was read afresh.
func (c *Cached) At() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}
