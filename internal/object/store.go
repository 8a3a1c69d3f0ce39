// Package object defines the object store seam that file data lives in, and
// the wrappers that add behaviour around any store (checksums, compression, encryption,
// retries, fault injection). Backends live in sub-packages (filestore, memstore, ...).
//
// Objects are immutable blocks of at most a few MiB: they are written once,
// whole, read by range and deleted. There is no append, rename or overwrite
// in place, which is what lets every backend stay small and crash safe.
//
// Import rules: object imports only the standard library,
// golang.org/x/crypto (XChaCha20-Poly1305 for encryption) and the codecs of
// the compression wrapper (klauspost/compress zstd, pierrec/lz4); backends import
// object; nothing here knows about inodes or metadata.
package object

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// ErrNotExist is returned (possibly wrapped) when an object is absent.
var ErrNotExist = errors.New("object does not exist")

// Info describes a stored object.
type Info struct {
	Key     string
	Size    int64
	ModTime time.Time
}

// Store is an object store. All methods are safe for concurrent use.
type Store interface {
	// Get returns a reader of the object's bytes from off, at most limit
	// of them (limit < 0: to the end). ErrNotExist if absent. The caller
	// closes the reader. Reading past the end returns what exists.
	Get(ctx context.Context, key string, off, limit int64) (io.ReadCloser, error)
	// Put stores size bytes from r as key, atomically: afterwards readers
	// see the whole new object or, if Put failed, nothing new; never part
	// of it (with WithFreshKey in ctx, a key nobody reads meanwhile, a
	// store may write in place instead). When Put returns nil the object
	// is durable (with a SyncBatch in ctx, once the batch's Sync returns
	// nil).
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Delete removes key. Deleting an absent key returns nil.
	Delete(ctx context.Context, key string) error
	// Head returns the object's Info, or ErrNotExist.
	Head(ctx context.Context, key string) (Info, error)
	// List returns up to limit objects whose keys start with prefix and
	// sort after after, in key order (limit <= 0: all).
	List(ctx context.Context, prefix, after string, limit int) ([]Info, error)
	// String names the store and location for logs, without secrets.
	String() string
}

// Unwrapper is implemented by wrappers to give the store they wrap.
type Unwrapper interface {
	Unwrap() Store
}

// Find returns the first store that is a T among s and the stores under
// its wrappers (Unwrapper), outermost first.
func Find[T any](s Store) (T, bool) {
	for s != nil {
		if t, ok := s.(T); ok {
			return t, true
		}
		u, ok := s.(Unwrapper)
		if !ok {
			break
		}
		s = u.Unwrap()
	}
	var zero T
	return zero, false
}

// listPage is how many objects one List call of Walk returns.
const listPage = 1000

// Walk lists every object whose key starts with prefix, in key order, a
// page of List at a time, and calls fn with each page. The error names
// the store and where the listing stopped.
func Walk(ctx context.Context, s Store, prefix string, fn func(page []Info)) error {
	after := ""
	for {
		infos, err := s.List(ctx, prefix, after, listPage)
		if err != nil {
			return fmt.Errorf("listing %s after %q: %w", s, after, err)
		}
		fn(infos)
		if len(infos) < listPage {
			return nil
		}
		after = infos[len(infos)-1].Key
	}
}

// readSoonKey marks a Put context with WithReadSoon.
type readSoonKey struct{}

// WithReadSoon returns a context for a Put whose object is likely to be
// read back soon and at random (the data layer marks compaction output):
// a store with a local cache, such as the file store's page cache, keeps
// the object there instead of writing around it. It is a hint; stores
// without such a cache ignore it.
func WithReadSoon(ctx context.Context) context.Context {
	return context.WithValue(ctx, readSoonKey{}, true)
}

// ReadSoon reports whether ctx carries WithReadSoon.
func ReadSoon(ctx context.Context) bool {
	v, _ := ctx.Value(readSoonKey{}).(bool)
	return v
}

// freshKeyKey marks a Put context with WithFreshKey.
type freshKeyKey struct{}

// WithFreshKey returns a context for a Put of a key that no object ever
// had and that nobody reads or puts concurrently until this Put returns
// nil: the data layer's block keys, whose slice ids are never reused and
// which the engine names only after their Put. A store may then write the
// object in place instead of atomically (the file store skips its
// temporary file and rename): a Put that fails or is cut short by a crash
// may leave a part of the object under the key, which nothing references
// and gc collects like any block whose commit never came. A Put that
// returns nil is as durable as any other. It is a hint, as WithReadSoon
// is; stores whose Puts are atomic anyway ignore it.
func WithFreshKey(ctx context.Context) context.Context {
	return context.WithValue(ctx, freshKeyKey{}, true)
}

// FreshKey reports whether ctx carries WithFreshKey.
func FreshKey(ctx context.Context) bool {
	v, _ := ctx.Value(freshKeyKey{}).(bool)
	return v
}
