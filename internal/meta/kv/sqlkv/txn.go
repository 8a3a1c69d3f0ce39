package sqlkv

import (
	"context"
	"errors"
	"fmt"
	"time"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// errReadOnly is kept by a View's tx on its first Set or Delete.
var errReadOnly = errors.New("sqlkv: write in a read-only transaction (View)")

// mode is the kind of a transaction.
type mode int

const (
	modeWrite     mode = iota // Txn
	modeRead                  // View
	modeExclusive             // Exclusive: a Txn holding other writers off
)

// txn is the one transaction helper: it begins a transaction (read-only
// for View; for Exclusive, followed by the dialect's exclusive
// statements), runs fn, commits, and retries the whole of fn with
// exponential backoff while the failure is a conflict or an unreachable
// database, for at most s.retryTimeout in total. Every Txn, View and
// Exclusive of the package runs through here.
func (s *Store) txn(ctx context.Context, m mode, fn func(kv.Tx) error) error {
	if s.closed.Load() {
		return errClosed
	}
	return kv.Retry(ctx, "sqlkv: "+s.name, s.retryTimeout, func() (kv.Class, error) {
		return s.attempt(ctx, m, fn)
	})
}

// attempt runs fn once in a fresh database transaction and classifies the
// outcome. A nil error means committed. A Txn of a store that guesses
// reads (guess.go) first runs with guesses, and at once again without
// them if they missed.
func (s *Store) attempt(ctx context.Context, m mode, fn func(kv.Tx) error) (kv.Class, error) {
	if m != modeWrite || s.guesses == nil {
		return s.attemptOnce(ctx, m, fn, false)
	}
	class, err := s.attemptOnce(ctx, m, fn, true)
	if errors.Is(err, errMissed) {
		return s.attemptOnce(ctx, m, fn, false)
	}
	return class, err
}

// attemptOnce is one attempt, guessing reads or not.
func (s *Store) attemptOnce(ctx context.Context, m mode, fn func(kv.Tx) error, guess bool) (kv.Class, error) {
	c, err := s.pool.begin(ctx, m == modeRead)
	if err != nil {
		return s.dialect.classify(err), s.wrap("begin", err)
	}
	// After a commit this only frees the connection; otherwise it also
	// ends the transaction, even if fn panics (SQLite has one writer).
	defer c.rollback()
	if m == modeExclusive {
		for _, q := range s.dialect.exclusive() {
			if err := c.execSQL(q); err != nil {
				return s.dialect.classify(err), s.wrap("exclusive", err)
			}
		}
	}
	t := &tx{ctx: ctx, c: c, batching: s.batching, readOnly: m == modeRead, real: !guess}
	if m == modeWrite {
		t.guesses = s.guesses // nil unless the store guesses
		if t.guesses != nil {
			t.began = time.Now()
		}
	}
	if lt, ok := c.(*liteTx); ok && m != modeRead && s.lite != nil {
		t.lite, t.lw = s.lite, s.lite.begin(lt.lc.dataVersion)
		defer s.lite.end()
	}
	fnErr := fn(t)
	if fnErr == nil {
		_ = t.flush() // an error is kept in t.err
	}
	if fnErr == nil && t.err == nil {
		if err := c.commit(); err != nil {
			if t.settle(false, err) != nil {
				return kv.Conflict, errMissed
			}
			return s.commitFailed(err)
		}
		t.settle(true)
		if t.lw != nil {
			s.lite.committed(t.lw)
		}
		return kv.Fatal, nil
	}
	if t.settle(false, t.err, fnErr) != nil {
		return kv.Conflict, errMissed
	}
	return s.failed(t.err, fnErr)
}

// failed picks the error and class of a transaction that did not commit:
// a retryable error kept by tx wins (fn may have wrapped or replaced it),
// then fn's own error, then tx's kept error.
func (s *Store) failed(txErr, fnErr error) (kv.Class, error) {
	if txErr != nil {
		if class := s.dialect.classify(txErr); class != kv.Fatal {
			return class, s.wrap("txn", txErr)
		}
	}
	if fnErr != nil {
		if errors.Is(fnErr, kv.ErrConflict) {
			return kv.Conflict, fnErr
		}
		return kv.Fatal, fnErr
	}
	return kv.Fatal, s.wrap("txn", txErr)
}

// commitFailed classifies a failed COMMIT. A conflict rolled the
// transaction back, so it is retried. A lost connection leaves the outcome
// unknown: running fn again could apply it twice, so the caller gets
// ErrUnavailable at once, unless the commit is known not to have happened
// (notCommittedError).
func (s *Store) commitFailed(err error) (kv.Class, error) {
	class := s.dialect.classify(err)
	var nc *notCommittedError
	if errors.As(err, &nc) {
		return class, s.wrap("commit", err)
	}
	switch class {
	case kv.Conflict:
		return kv.Conflict, s.wrap("commit", err)
	case kv.Unavailable:
		return kv.Fatal, fmt.Errorf("sqlkv: %s: commit outcome unknown: %w (%w)", s.name, meta.ErrUnavailable, err)
	}
	return kv.Fatal, s.wrap("commit", err)
}

func (s *Store) wrap(op string, err error) error {
	return fmt.Errorf("sqlkv: %s: %s: %w", s.name, op, err)
}

// notCommittedError is a failed commit known not to have committed (see
// pgConn.commit): it is classified like a failure before the commit, so a
// lost connection is retried.
type notCommittedError struct{ err error }

func (e *notCommittedError) Error() string { return e.err.Error() }
func (e *notCommittedError) Unwrap() error { return e.err }
