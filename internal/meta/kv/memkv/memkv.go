// Package memkv is an in-memory kv.Store for the unit tests of the layers
// above the kv seam (kvmeta, vfs). It is not durable and not meant for
// volumes anyone keeps.
//
// Design: the data is one copy-on-write B-tree (github.com/google/btree).
// Read-write transactions are serialized by a mutex (txMu); each works on
// a lazy clone of the tree (its private write set) that replaces the
// shared tree only when fn returns nil, so an error from fn rolls
// everything back. View takes the read lock of the shared tree and reads
// it directly, beside a running Txn. Serializability is therefore trivial,
// and ErrConflict never happens. The same mutex makes every Txn exclusive
// (kv.Excluder): Exclusive is Txn.
//
// Import rules: memkv imports kv and the standard library (plus btree).
package memkv

import (
	"bytes"
	"context"
	"errors"
	"sync"

	"github.com/google/btree"

	"shoal/internal/meta/kv"
)

// Errors memkv returns.
var (
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("memkv: store closed")
	// ErrReadOnly: a write was attempted inside View.
	ErrReadOnly = errors.New("memkv: write in read-only transaction")
)

type item struct {
	key, value []byte
}

func less(a, b item) bool { return bytes.Compare(a.key, b.key) < 0 }

// Store is an in-memory kv.Store. The zero value is not usable; call New.
type Store struct {
	txMu   sync.Mutex   // held by the one running Txn
	mu     sync.RWMutex // guards tree and closed
	tree   *btree.BTreeG[item]
	closed bool
}

var (
	_ kv.Store    = (*Store)(nil)
	_ kv.Excluder = (*Store)(nil)
)

// New returns an empty store.
func New() *Store {
	return &Store{tree: btree.NewG(16, less)}
}

// Txn runs fn on a private clone of the tree and publishes the clone when
// fn returns nil. Views go on reading the published tree meanwhile.
func (s *Store) Txn(ctx context.Context, fn func(tx kv.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.txMu.Lock()
	defer s.txMu.Unlock()
	s.mu.Lock() // Clone marks the shared tree copy-on-write: a write
	closed, t := s.closed, &tx{tree: s.tree.Clone()}
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if err := fn(t); err != nil {
		return err
	}
	if t.err != nil {
		return t.err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.tree = t.tree
	return nil
}

// Exclusive implements kv.Excluder: Txn already holds every other Txn off
// while fn runs (Views read the last published tree beside it).
func (s *Store) Exclusive(ctx context.Context, fn func(tx kv.Tx) error) error {
	return s.Txn(ctx, fn)
}

// View runs fn under the read lock on the shared tree.
func (s *Store) View(ctx context.Context, fn func(tx kv.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	t := &tx{tree: s.tree, readOnly: true}
	if err := fn(t); err != nil {
		return err
	}
	return t.err
}

// SnapshotViews implements kv.SnapshotViewer: a View reads the
// published tree, which a Txn replaces (once the View is done) and never
// changes.
func (s *Store) SnapshotViews() bool { return true }

// Name implements kv.Store.
func (s *Store) Name() string { return "memkv" }

// Close drops the data. Later calls fail with ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.tree = btree.NewG(16, less)
	return nil
}

// Len returns the number of keys, for tests that check for leaks.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.tree.Len()
}

// tx is a transaction over one tree: a clone in Txn, the shared tree in View.
type tx struct {
	tree     *btree.BTreeG[item]
	readOnly bool
	err      error
}

var _ kv.Tx = (*tx)(nil)

// Get implements kv.Tx.
func (t *tx) Get(key []byte) ([]byte, error) {
	if t.err != nil {
		return nil, t.err
	}
	it, ok := t.tree.Get(item{key: key})
	if !ok {
		return nil, nil
	}
	return append([]byte{}, it.value...), nil
}

// Set implements kv.Tx; in View it fails the transaction.
func (t *tx) Set(key, value []byte) {
	if t.writable() {
		t.tree.ReplaceOrInsert(item{key: bytes.Clone(key), value: append([]byte{}, value...)})
	}
}

// Delete implements kv.Tx; in View it fails the transaction.
func (t *tx) Delete(key []byte) {
	if t.writable() {
		t.tree.Delete(item{key: key})
	}
}

func (t *tx) writable() bool {
	if t.readOnly && t.err == nil {
		t.err = ErrReadOnly
	}
	return t.err == nil
}

// Scan collects the matching items first, so fn may call Get (or even Set)
// without disturbing the iteration.
func (t *tx) Scan(prefix, after []byte, limit int, fn func(key, value []byte) bool) error {
	if t.err != nil {
		return t.err
	}
	start := append(bytes.Clone(prefix), after...)
	var found []item
	t.tree.AscendGreaterOrEqual(item{key: start}, func(it item) bool {
		if !bytes.HasPrefix(it.key, prefix) {
			return false
		}
		if len(after) > 0 && bytes.Equal(it.key, start) {
			return true
		}
		found = append(found, it)
		return limit <= 0 || len(found) < limit
	})
	for _, it := range found {
		if !fn(bytes.Clone(it.key), append([]byte{}, it.value...)) {
			break
		}
	}
	return nil
}
