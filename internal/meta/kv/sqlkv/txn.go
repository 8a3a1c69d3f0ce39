package sqlkv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// errClass says what the txn helper does with an error.
type errClass int

const (
	// classFatal: return the error to the caller as it is.
	classFatal errClass = iota
	// classConflict: the transaction lost a race and was rolled back;
	// running fn again is safe.
	classConflict
	// classUnavailable: the database could not be reached; the
	// transaction did not commit, so running fn again is safe.
	classUnavailable
)

// Backoff bounds. Conflicts clear in microseconds, so they start small;
// an unreachable server takes seconds to come back.
const (
	conflictBase = 200 * time.Microsecond
	conflictCap  = 100 * time.Millisecond
	offlineBase  = 50 * time.Millisecond
	offlineCap   = 2 * time.Second
)

// errReadOnly is kept by a View's tx on its first Set or Delete.
var errReadOnly = errors.New("sqlkv: write in a read-only transaction (View)")

// txn is the one transaction helper: it begins a transaction (read-only
// for View), runs fn, commits, and retries the whole of fn with
// exponential backoff while the failure is a conflict or an unreachable
// database, for at most s.retryTimeout in total. Every Txn and View of the
// package runs through here.
func (s *Store) txn(ctx context.Context, readOnly bool, fn func(kv.Tx) error) error {
	if s.closed.Load() {
		return errClosed
	}
	deadline := time.Now().Add(s.retryTimeout)
	for attempt := 0; ; attempt++ {
		class, err := s.attempt(ctx, readOnly, fn)
		if ctxErr := ctx.Err(); err != nil && ctxErr != nil {
			// Canceled or timed out: whatever failed, say so first.
			return fmt.Errorf("sqlkv: %s: %w (%v)", s.name, ctxErr, err)
		}
		if class == classFatal {
			return err
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return giveUp(s.name, class, attempt+1, err)
		}
		// The last retry runs at the deadline: the whole bound is used.
		if err := sleep(ctx, min(backoff(class, attempt), remaining)); err != nil {
			return fmt.Errorf("sqlkv: %s: %w", s.name, err)
		}
	}
}

// attempt runs fn once in a fresh database transaction and classifies the
// outcome. A nil error means committed.
func (s *Store) attempt(ctx context.Context, readOnly bool, fn func(kv.Tx) error) (errClass, error) {
	c, err := s.pool.begin(ctx, readOnly)
	if err != nil {
		return s.dialect.classify(err), s.wrap("begin", err)
	}
	// After a commit this only frees the connection; otherwise it also
	// ends the transaction, even if fn panics (SQLite has one writer).
	defer c.rollback()
	t := &tx{ctx: ctx, c: c, batching: s.batching, readOnly: readOnly}
	fnErr := fn(t)
	if fnErr == nil {
		_ = t.flush() // an error is kept in t.err
	}
	if fnErr == nil && t.err == nil {
		if err := c.commit(); err != nil {
			return s.commitFailed(err)
		}
		return classFatal, nil
	}
	return s.failed(t.err, fnErr)
}

// failed picks the error and class of a transaction that did not commit:
// a retryable error kept by tx wins (fn may have wrapped or replaced it),
// then fn's own error, then tx's kept error.
func (s *Store) failed(txErr, fnErr error) (errClass, error) {
	if txErr != nil {
		if class := s.dialect.classify(txErr); class != classFatal {
			return class, s.wrap("txn", txErr)
		}
	}
	if fnErr != nil {
		if errors.Is(fnErr, kv.ErrConflict) {
			return classConflict, fnErr
		}
		return classFatal, fnErr
	}
	return classFatal, s.wrap("txn", txErr)
}

// commitFailed classifies a failed COMMIT. A conflict rolled the
// transaction back, so it is retried. A lost connection leaves the outcome
// unknown: running fn again could apply it twice, so the caller gets
// ErrUnavailable at once.
func (s *Store) commitFailed(err error) (errClass, error) {
	switch s.dialect.classify(err) {
	case classConflict:
		return classConflict, s.wrap("commit", err)
	case classUnavailable:
		return classFatal, fmt.Errorf("sqlkv: %s: commit outcome unknown: %w (%w)", s.name, meta.ErrUnavailable, err)
	}
	return classFatal, s.wrap("commit", err)
}

func (s *Store) wrap(op string, err error) error {
	return fmt.Errorf("sqlkv: %s: %s: %w", s.name, op, err)
}

// giveUp builds the error returned once the retry bound is spent.
func giveUp(name string, class errClass, attempts int, last error) error {
	if class == classUnavailable {
		return fmt.Errorf("sqlkv: %s: %w after %d attempts: %w", name, meta.ErrUnavailable, attempts, last)
	}
	// A lock nobody releases (another process stuck in a transaction)
	// makes the store as unusable as a dead server.
	return fmt.Errorf("sqlkv: %s: %w: still conflicting after %d attempts: %w (%w)", name, meta.ErrUnavailable, attempts, kv.ErrConflict, last)
}

// backoff returns the delay before retry number attempt+1: exponential
// from the class's base up to its cap, with ±50% jitter so that colliding
// clients spread out.
func backoff(class errClass, attempt int) time.Duration {
	base, ceiling := conflictBase, conflictCap
	if class == classUnavailable {
		base, ceiling = offlineBase, offlineCap
	}
	d := base << min(attempt, 20)
	if d > ceiling || d <= 0 {
		d = ceiling
	}
	return d/2 + rand.N(d)
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
