package rediskv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
	"shoal/internal/tlsconf"
)

// DefaultRetryTimeout bounds how long one Txn or View keeps retrying
// conflicts and connection failures before it gives up.
const DefaultRetryTimeout = 30 * time.Second

// Errors of this package.
var (
	// errClosed is returned by Txn and View after Close.
	errClosed = errors.New("rediskv: store is closed")
	// errReadOnly is kept by a View's tx on its first Set or Delete.
	errReadOnly = errors.New("rediskv: write in a read-only transaction (View)")
	// errEmptyKey is kept by a tx asked to write the empty key, which the
	// index layout cannot hold.
	errEmptyKey = errors.New("rediskv: empty key")
)

// Options tune a Store. The zero value means the defaults.
type Options struct {
	// RetryTimeout bounds the total time one Txn or View spends retrying
	// (default DefaultRetryTimeout). The URL's retry_timeout wins.
	RetryTimeout time.Duration
}

// Store is a kv.Store over Redis. It is safe for concurrent use.
type Store struct {
	client       redis.UniversalClient
	bulk         bulkClient // for Exclusive's commits (exclusive.go)
	keys         layout
	cluster      bool
	name         string
	retryTimeout time.Duration
	freezeTTL    time.Duration // freezeTTL; tests shorten it
	closed       atomic.Bool
	seeds        seedCache                // values lately read or written (seeds.go)
	track        tracker                  // the client-side cache (track.go)
	noCache      bool                     // the URL's cache=off
	absent       atomic.Pointer[[]string] // Redis key prefixes guessed absent (seeds.go)
}

var _ kv.Store = (*Store)(nil)

// Open connects to the Redis a META-URL names (forms in the package doc)
// and checks that it answers. An unreachable server is an error wrapping
// meta.ErrUnavailable that names the address.
func Open(ctx context.Context, rawURL string) (kv.Store, error) {
	return OpenOptions(ctx, rawURL, Options{})
}

// OpenOptions is Open with options.
func OpenOptions(ctx context.Context, rawURL string, opts Options) (kv.Store, error) {
	c, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	s := &Store{keys: newLayout(c.ns), cluster: c.cluster, name: c.display, retryTimeout: c.retry, freezeTTL: freezeTTL, noCache: c.noCache}
	s.track.s = s
	if s.retryTimeout <= 0 {
		s.retryTimeout = opts.RetryTimeout
	}
	if s.retryTimeout <= 0 {
		s.retryTimeout = DefaultRetryTimeout
	}
	c.opts.IsClusterMode = c.cluster
	c.opts.MaxRetries = -1 // retrying is txn's job: a silent resend after WATCH is unsafe
	c.opts.DialerRetries = 1
	s.client = redis.NewUniversalClient(&c.opts)
	s.bulk.opts = c.opts
	if err := s.client.Ping(ctx).Err(); err != nil {
		_ = s.client.Close()
		if hint := tlsconf.Explain(err, strings.Join(c.opts.Addrs, ","), tlsconf.Hints{CA: "?ca=FILE in the META-URL", Cert: "cert=FILE&key=FILE"}); hint != "" {
			return nil, fmt.Errorf("rediskv: %s: %s: %w", s.name, hint, err)
		}
		if classify(err) == kv.Unavailable {
			return nil, fmt.Errorf("rediskv: cannot connect to Redis: is the server running at %v? %w (%w)", c.opts.Addrs, meta.ErrUnavailable, err)
		}
		return nil, fmt.Errorf("rediskv: %s: %w", s.name, err)
	}
	if err := s.checkVersion(ctx); err != nil {
		_ = s.client.Close()
		return nil, err
	}
	return s, nil
}

// checkVersion stamps a new namespace with layoutVersion and refuses one
// stamped by a newer Shoal.
func (s *Store) checkVersion(ctx context.Context) error {
	key := s.keys.version()
	if err := s.client.SetNX(ctx, key, layoutVersion, 0).Err(); err != nil {
		return s.wrap("layout version", err)
	}
	v, err := s.client.Get(ctx, key).Int()
	if err != nil {
		return s.wrap("layout version", err)
	}
	if v > layoutVersion {
		return fmt.Errorf("rediskv: %s: layout version %d is newer than this binary's %d, upgrade Shoal: %w", s.name, v, layoutVersion, meta.ErrNewerFormat)
	}
	return nil
}

// Txn implements kv.Store.
func (s *Store) Txn(ctx context.Context, fn func(tx kv.Tx) error) error {
	return s.txn(ctx, false, fn)
}

// View implements kv.Store.
func (s *Store) View(ctx context.Context, fn func(tx kv.Tx) error) error {
	return s.txn(ctx, true, fn)
}

// Name implements kv.Store: the URL without password or parameters.
func (s *Store) Name() string { return s.name }

// Close implements kv.Store.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return errClosed
	}
	if err := errors.Join(s.track.close(), s.client.Close(), s.bulk.close()); err != nil {
		return fmt.Errorf("rediskv: %s: close: %w", s.name, err)
	}
	return nil
}

// classify sorts go-redis errors. TxFailedErr is EXEC refusing because a
// WATCHed key changed. Network errors and the replies of a server that is
// starting, failing over or full of clients mean "not now".
func classify(err error) kv.Class {
	switch {
	case err == nil:
		return kv.Fatal
	case errors.Is(err, redis.TxFailedErr), errors.Is(err, kv.ErrConflict):
		return kv.Conflict
	case errors.Is(err, redis.ErrClosed), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return kv.Fatal
	case redis.IsLoadingError(err), redis.IsReadOnlyError(err), redis.IsMasterDownError(err),
		redis.IsClusterDownError(err), redis.IsTryAgainError(err), redis.IsMaxClientsError(err),
		redis.IsNoReplicasError(err), errors.Is(err, redis.ErrPoolTimeout):
		return kv.Unavailable
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return kv.Unavailable
	}
	return kv.Fatal
}

var _ kv.PointReader = (*Store)(nil)

// GetOne implements kv.PointReader: one GET on a pooled connection (no
// dedicated one, as a View takes), with View's retry rules. One GET is
// one state. A context with a meta.Cached may be answered from the
// client-side cache instead (track.go).
func (s *Store) GetOne(ctx context.Context, key []byte) ([]byte, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	rk := s.keys.value(key)
	if c := meta.CachedOf(ctx); c != nil && s.track.ensure() {
		if _, vs, at, ok := s.track.get([]string{rk}, nil); ok {
			s.track.served.Add(1)
			c.Served(at)
			if !vs[0].present {
				return nil, nil
			}
			return append([]byte{}, vs[0].value...), nil
		}
	}
	var out []byte
	err := kv.Retry(ctx, "rediskv: "+s.name, s.retryTimeout, func() (kv.Class, error) {
		g := s.track.guard([]string{rk})
		v, err := s.client.Get(ctx, rk).Bytes()
		switch {
		case errors.Is(err, redis.Nil):
			out = nil
			s.seeds.put([]string{rk}, [][]byte{nil}, []bool{false})
			s.track.fill([]string{rk}, [][]byte{nil}, []bool{false}, g)
			return kv.Fatal, nil
		case err != nil:
			return classify(err), s.wrap("get", err)
		case v == nil:
			v = []byte{}
		}
		out = v
		kept := append([]byte{}, v...)
		s.seeds.put([]string{rk}, [][]byte{kept}, []bool{true})
		s.track.fill([]string{rk}, [][]byte{kept}, []bool{true}, g)
		return kv.Fatal, nil
	})
	return out, err
}

var _ kv.Cacher = (*Store)(nil)

// CacheKeys implements kv.Cacher: values of keys under prefixes are kept
// on the client, invalidated by Redis (track.go). Tracking starts with the
// first read that may be answered from the cache. Not in Cluster mode,
// nor with the URL's cache=off.
func (s *Store) CacheKeys(prefixes ...[]byte) {
	p := make([]string, len(prefixes))
	for i, pre := range prefixes {
		p[i] = s.keys.value(pre)
	}
	s.track.prefixes.Store(&p)
}

var _ kv.AbsentGuesser = (*Store)(nil)

// GuessAbsent implements kv.AbsentGuesser: a write transaction's first
// read round may take keys under prefixes as absent (seeds.go).
func (s *Store) GuessAbsent(prefixes ...[]byte) {
	p := make([]string, len(prefixes))
	for i, pre := range prefixes {
		p[i] = s.keys.value(pre)
	}
	s.absent.Store(&p)
}

// CachedReads implements kv.Cacher.
func (s *Store) CachedReads() int64 { return s.track.served.Load() }
