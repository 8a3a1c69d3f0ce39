package rediskv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// Backoff bounds: conflicts clear in microseconds, an unreachable server
// takes seconds to come back.
const (
	conflictBase = 200 * time.Microsecond
	conflictCap  = 100 * time.Millisecond
	offlineBase  = 50 * time.Millisecond
	offlineCap   = 2 * time.Second
)

// txn is the one transaction helper: it runs fn on a dedicated connection
// with optimistic WATCHes, commits (MULTI/EXEC), and runs fn again with
// exponential backoff while the failure is a conflict or an unreachable
// server, for at most s.retryTimeout in total.
func (s *Store) txn(ctx context.Context, readOnly bool, fn func(kv.Tx) error) error {
	if s.closed.Load() {
		return errClosed
	}
	deadline := time.Now().Add(s.retryTimeout)
	for attempt := 0; ; attempt++ {
		class, err := s.attempt(ctx, readOnly, fn)
		if ctxErr := ctx.Err(); err != nil && ctxErr != nil {
			// Canceled or timed out: whatever failed, say so first.
			return fmt.Errorf("rediskv: %s: %w (%v)", s.name, ctxErr, err)
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
			return fmt.Errorf("rediskv: %s: %w", s.name, err)
		}
	}
}

// attempt runs fn once and commits. A nil error means committed.
func (s *Store) attempt(ctx context.Context, readOnly bool, fn func(kv.Tx) error) (errClass, error) {
	class, result := classFatal, error(nil)
	var routing []string
	if s.cluster {
		routing = []string{s.keys.route()} // picks the namespace's node
	}
	err := s.client.Watch(ctx, func(rtx *redis.Tx) error {
		t := &tx{s: s, ctx: ctx, rtx: rtx, readOnly: readOnly, watched: map[string]bool{}}
		class, result = t.finish(fn(t))
		if t.watching {
			// The connection goes back to the pool: drop its WATCHes, or
			// a later transaction on it could fail for our keys.
			_ = rtx.Unwatch(ctx).Err()
		}
		return nil
	}, routing...)
	if err != nil {
		return classify(err), s.wrap("watch", err)
	}
	return class, result
}

// finish commits t after fn returned fnErr, or explains why not.
//
// fn may have read an inconsistent mix of states: WATCH only tells at EXEC
// whether a read went stale. So an error from fn is trusted only after
// the reads are validated; if they were stale, fn runs again.
func (t *tx) finish(fnErr error) (errClass, error) {
	if t.err != nil {
		if class := classify(t.err); class != classFatal || fnErr == nil {
			return class, t.s.wrap("txn", t.err)
		}
	}
	if fnErr != nil {
		if errors.Is(fnErr, kv.ErrConflict) {
			return classConflict, fnErr
		}
		t.writes = nil
		if err := t.commit(); err != nil {
			return classify(err), t.s.wrap("validate", err)
		}
		return classFatal, fnErr
	}
	err := t.commit()
	switch class := classify(err); {
	case err == nil:
		return classFatal, nil
	case class == classUnavailable && len(t.writes) > 0:
		// EXEC may or may not have run: running fn again could apply it
		// twice, so report the outcome as unknown at once.
		return classFatal, fmt.Errorf("rediskv: %s: commit outcome unknown: %w (%w)", t.s.name, meta.ErrUnavailable, err)
	default:
		return class, t.s.wrap("commit", err)
	}
}

// commit validates the WATCHed reads and applies the writes in one
// MULTI/EXEC. A View (or a Txn that wrote nothing) still runs MULTI/EXEC,
// with a PING, so EXEC tells whether its reads stayed consistent.
func (t *tx) commit() error {
	if len(t.writes) == 0 && len(t.watched) == 0 {
		return nil
	}
	var eval *redis.Cmd
	_, err := t.rtx.TxPipelined(t.ctx, func(p redis.Pipeliner) error {
		if len(t.writes) == 0 {
			p.Ping(t.ctx)
			return nil
		}
		eval = p.Eval(t.ctx, commitScript, []string{t.s.keys.route()}, t.scriptArgs()...)
		return nil
	})
	t.watching = false // EXEC, run or refused, ends every WATCH
	if err == nil && eval != nil {
		if n, evalErr := eval.Int(); evalErr != nil {
			return evalErr
		} else if n == 0 {
			return kv.ErrConflict // the unWATCHed first read went stale
		}
	}
	return err
}

// scriptArgs encodes the writes for commitScript, in key order.
func (t *tx) scriptArgs() []any {
	keys := make([]string, 0, len(t.writes))
	for k := range t.writes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := make([]any, 0, 4+3*len(keys))
	args = append(args, t.s.keys.base)
	if t.first != nil {
		args = append(args, 1, t.first.rkey, t.first.fp)
	} else {
		args = append(args, 0)
	}
	for _, k := range keys {
		if w := t.writes[k]; w.deleted {
			args = append(args, "d", k)
		} else {
			args = append(args, "s", k, w.value)
		}
	}
	return args
}

// giveUp builds the error returned once the retry bound is spent. Keys
// that keep changing under a transaction make the store as unusable as a
// dead server, so both wrap meta.ErrUnavailable.
func giveUp(name string, class errClass, attempts int, last error) error {
	if class == classConflict {
		return fmt.Errorf("rediskv: %s: %w: still conflicting after %d attempts: %w (%w)", name, meta.ErrUnavailable, attempts, kv.ErrConflict, last)
	}
	return fmt.Errorf("rediskv: %s: %w after %d attempts: %w", name, meta.ErrUnavailable, attempts, last)
}

func (s *Store) wrap(op string, err error) error {
	return fmt.Errorf("rediskv: %s: %s: %w", s.name, op, err)
}

// backoff returns the delay before retry number attempt+1: exponential
// from the class's base up to its cap, with ±50% jitter.
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
