package rediskv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"

	"github.com/redis/go-redis/v9"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// txn is the one transaction helper: it runs fn on a dedicated connection
// with optimistic WATCHes, commits (MULTI/EXEC), and runs fn again with
// exponential backoff while the failure is a conflict or an unreachable
// server, for at most s.retryTimeout in total.
func (s *Store) txn(ctx context.Context, readOnly bool, fn func(kv.Tx) error) error {
	if s.closed.Load() {
		return errClosed
	}
	first := true
	return kv.Retry(ctx, "rediskv: "+s.name, s.retryTimeout, func() (kv.Class, error) {
		seedable := first && !readOnly
		snapOK := first && readOnly
		var cached *meta.Cached
		if first && readOnly {
			if cached = meta.CachedOf(ctx); cached != nil && !s.track.ensure() {
				cached = nil
			}
		}
		first = false
		return s.attempt(ctx, readOnly, seedable, snapOK, cached, fn)
	})
}

// attempt runs fn once and commits. A nil error means committed.
// seedable: its first read round may take seeds (seeds.go); snapOK: a
// View's short Scan may be read whole by one script (snap.go); cached: a
// View's first read round may come from the client-side cache (track.go).
func (s *Store) attempt(ctx context.Context, readOnly, seedable, snapOK bool, cached *meta.Cached, fn func(kv.Tx) error) (kv.Class, error) {
	class, result := kv.Fatal, error(nil)
	var routing []string
	if s.cluster {
		routing = []string{s.keys.route()} // picks the namespace's node
	}
	err := s.client.Watch(ctx, func(rtx *redis.Tx) error {
		t := &tx{s: s, ctx: ctx, rtx: rtx, readOnly: readOnly, seedable: seedable, guessing: seedable, snapOK: snapOK, cached: cached, watched: map[string]bool{}}
		class, result = t.finish(fn(t))
		if result != nil && len(t.seeded) > 0 {
			s.seeds.drop(t.seeded)
		}
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
func (t *tx) finish(fnErr error) (kv.Class, error) {
	if t.err != nil {
		if class := classify(t.err); class != kv.Fatal || fnErr == nil {
			return class, t.s.wrap("txn", t.err)
		}
	}
	if fnErr != nil {
		if errors.Is(fnErr, kv.ErrConflict) {
			return kv.Conflict, fnErr
		}
		t.writes = nil
		if err := t.commit(); err != nil {
			return classify(err), t.s.wrap("validate", err)
		}
		return kv.Fatal, fnErr
	}
	err := t.commit()
	switch class := classify(err); {
	case err == nil:
		return kv.Fatal, nil
	case class == kv.Unavailable && len(t.writes) > 0 && !unsent(err):
		// EXEC may or may not have run: running fn again could apply it
		// twice, so report the outcome as unknown at once.
		return kv.Fatal, fmt.Errorf("rediskv: %s: commit outcome unknown: %w (%w)", t.s.name, meta.ErrUnavailable, err)
	default:
		return class, t.s.wrap("commit", err)
	}
}

// unsent says err is a failure to reach the server at all (no connection
// could be made, or none was free): the commit was never sent and may run
// again. A seeded transaction's commit is often its first command, so this
// is how it meets a server that went away (seeds.go).
func unsent(err error) bool {
	var op *net.OpError
	return errors.Is(err, redis.ErrPoolTimeout) || errors.As(err, &op) && op.Op == "dial"
}

// commit applies the writes, checking the reads first.
//
// With nothing WATCHed (only point reads), every read is a check and all
// of them were one state as of the last read round: a transaction without
// writes is done, and one with writes is a single EVALSHA of the commit
// script, which compares the checks and writes only if all still hold.
// Once WATCHing (a Scan), the script runs in MULTI/EXEC, with a PING in
// its place if nothing was written, so that EXEC tells whether the
// WATCHed reads stayed current.
func (t *tx) commit() error {
	if t.token != "" {
		return t.commitExclusive()
	}
	if len(t.fresh) == 0 || len(t.writes) == 0 || !t.s.track.ensure() {
		return t.commitOnce()
	}
	t.s.track.freshBegin(t.fresh) // before the commit is sent (fresh.go)
	err := t.commitOnce()
	t.s.track.freshEnd(t.fresh, err == nil)
	return err
}

// commitOnce is commit of a transaction that is not an Exclusive's.
func (t *tx) commitOnce() error {
	// A seeded transaction is validated even without writes (seeds.go).
	validate := len(t.writes) > 0 || len(t.seeded) > 0
	var args []any
	if validate {
		head := []any{t.s.keys.base, "", len(t.checks)}
		for _, c := range t.checks {
			head = append(head, c.rkey, c.fp)
		}
		args = t.writeArgs(head, t.sortedWrites())
	}
	if len(t.writes) > 0 && t.s.track.running.Load() {
		rkeys, set := t.writtenRKeys()
		t.s.track.writing(set)       // a deleted key is not worth reading back
		defer t.s.track.wrote(rkeys) // run, failed or unknown: the old values go
	}
	route := []string{t.s.keys.route()}
	if !t.watching {
		if !validate {
			return nil
		}
		err := scriptResult(commitScriptSHA.Run(t.ctx, t.rtx, route, args...))
		if err == nil {
			t.seedWrites()
		}
		return err
	}
	var eval *redis.Cmd
	_, err := t.rtx.TxPipelined(t.ctx, func(p redis.Pipeliner) error {
		if len(t.writes) == 0 {
			p.Ping(t.ctx)
			return nil
		}
		eval = p.Eval(t.ctx, commitScript, route, args...)
		return nil
	})
	t.watching = false // EXEC, run or refused, ends every WATCH
	if err == nil && eval != nil {
		if err = scriptResult(eval); err == nil {
			t.seedWrites()
		}
	}
	return err
}

// writtenRKeys returns the Redis keys of the writes, all of them and
// those set (not deleted).
func (t *tx) writtenRKeys() (all, set []string) {
	all = make([]string, 0, len(t.writes))
	set = make([]string, 0, len(t.writes))
	for k, w := range t.writes {
		rk := t.s.keys.value([]byte(k))
		all = append(all, rk)
		if !w.deleted {
			set = append(set, rk)
		}
	}
	return all, set
}

// commitScriptSHA sends commitScript by its SHA-1 (EVALSHA), loading it
// on the server the first time it is missing there.
var commitScriptSHA = redis.NewScript(commitScript)

// scriptResult reads commitScript's reply.
func scriptResult(eval *redis.Cmd) error {
	n, err := eval.Int()
	switch {
	case err != nil:
		return err
	case n == 0:
		return kv.ErrConflict // a check failed: a value read has changed
	case n == -1:
		return errFrozen
	case n == -2:
		return errFreezeLost
	}
	return nil
}

// sortedWrites returns the written keys in key order.
func (t *tx) sortedWrites() []string {
	keys := make([]string, 0, len(t.writes))
	for k := range t.writes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// writeArgs appends the writes of keys to head, encoded for commitScript.
func (t *tx) writeArgs(head []any, keys []string) []any {
	args := make([]any, 0, len(head)+3*len(keys))
	args = append(args, head...)
	for _, k := range keys {
		if w := t.writes[k]; w.deleted {
			args = append(args, "d", k)
		} else {
			args = append(args, "s", k, w.value)
		}
	}
	return args
}

func (s *Store) wrap(op string, err error) error {
	return fmt.Errorf("rediskv: %s: %s: %w", s.name, op, err)
}
