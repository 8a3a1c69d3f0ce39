// Package memstore is an in-memory object.Store for unit tests of the layers
// above the object seam. It is never the proof that a real backend works.
package memstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"shoal/internal/object"
)

// Store keeps objects in a map.
type Store struct {
	mu      sync.RWMutex
	objects map[string]entry
}

type entry struct {
	data    []byte
	modTime time.Time
}

var _ object.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store { return &Store{objects: map[string]entry{}} }

// Get implements object.Store.
func (s *Store) Get(ctx context.Context, key string, off, limit int64) (io.ReadCloser, error) {
	s.mu.RLock()
	e, ok := s.objects[key]
	s.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("memstore: get %q: %w", key, object.ErrNotExist)
	}
	data := e.data
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	data = data[off:]
	if limit >= 0 && limit < int64(len(data)) {
		data = data[:limit]
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// Put implements object.Store.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	data, err := io.ReadAll(io.LimitReader(r, size+1))
	if err != nil {
		return fmt.Errorf("memstore: put %q: %w", key, err)
	}
	if int64(len(data)) != size {
		return fmt.Errorf("memstore: put %q: got %d bytes, want %d", key, len(data), size)
	}
	s.mu.Lock()
	s.objects[key] = entry{data: data, modTime: time.Now()}
	s.mu.Unlock()
	return nil
}

// Delete implements object.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	s.mu.Lock()
	delete(s.objects, key)
	s.mu.Unlock()
	return nil
}

// Head implements object.Store.
func (s *Store) Head(ctx context.Context, key string) (object.Info, error) {
	s.mu.RLock()
	e, ok := s.objects[key]
	s.mu.RUnlock()
	if !ok {
		return object.Info{}, fmt.Errorf("memstore: head %q: %w", key, object.ErrNotExist)
	}
	return object.Info{Key: key, Size: int64(len(e.data)), ModTime: e.modTime}, nil
}

// List implements object.Store.
func (s *Store) List(ctx context.Context, prefix, after string, limit int) ([]object.Info, error) {
	s.mu.RLock()
	var out []object.Info
	for k, e := range s.objects {
		if strings.HasPrefix(k, prefix) && k > after {
			out = append(out, object.Info{Key: k, Size: int64(len(e.data)), ModTime: e.modTime})
		}
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Corrupt replaces an object's bytes, for tests that inject damage.
func (s *Store) Corrupt(key string, data []byte) {
	s.mu.Lock()
	s.objects[key] = entry{data: data, modTime: time.Now()}
	s.mu.Unlock()
}

// String implements object.Store.
func (s *Store) String() string { return "mem://" }
