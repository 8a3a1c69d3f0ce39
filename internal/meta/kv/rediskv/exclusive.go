package rediskv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"shoal/internal/meta/kv"
)

// Exclusive (kv.Excluder) freezes the namespace: it SETs the freeze key
// (layout.freeze) to a random token with NX and a TTL, and while the key
// holds another token the commit script refuses every transaction's
// writes (errFrozen, a conflict: the writer backs off and runs again, as
// after any conflict, within its retry bound). Redis applies commands one
// at a time, so every commit applied before the SET returned is in the
// state fn reads, and none after it until the freeze ends. fn's reads
// need no WATCH; its commit runs the script with its token, which refuses
// to write unless the freeze key still holds that token (errFreezeLost).
const (
	// freezeTTL bounds how long the freeze of an Exclusive whose process
	// died keeps writers out. It is below the default retry bound, so a
	// writer that meets a dead freeze waits for it to lapse and carries
	// on. A live Exclusive refreshes the TTL every freezeTTL/3.
	freezeTTL = 15 * time.Second
	// exclusiveChunk is how many writes one commitScript call of an
	// Exclusive applies. The calls run in one MULTI/EXEC, so they apply
	// together, but each stays short: Redis answers BUSY to everyone while
	// a single script runs past lua-time-limit (5 s).
	exclusiveChunk = 4096
	// bulkTimeout is the read and write timeout of an Exclusive's commit
	// (the client's usual one is 5 s): Redis applies 200,000 writes in a
	// few seconds, during which it serves no one else.
	bulkTimeout = 2 * time.Minute
)

var (
	// errFrozen: a commit refused because an Exclusive holds the
	// namespace; the transaction runs again after a backoff.
	errFrozen = fmt.Errorf("rediskv: the volume is frozen by an Exclusive transaction: %w", kv.ErrConflict)
	// errFreezeLost: an Exclusive's freeze lapsed (its TTL ran out or it
	// was removed) before its commit, so others may have written; fn's
	// result was not committed.
	errFreezeLost = errors.New("rediskv: Exclusive lost its freeze before committing (stalled past its TTL?): nothing was written")
)

// refreshScript extends the freeze's TTL (ARGV[2] ms) if it still holds
// the token ARGV[1]; releaseScript deletes it then. Both return 1 if the
// token was there.
const (
	refreshScript = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`
	releaseScript = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`
)

var _ kv.Excluder = (*Store)(nil)

// Exclusive implements kv.Excluder. Each attempt takes a new freeze: one
// that finds another Exclusive's freeze is a conflict and backs off.
func (s *Store) Exclusive(ctx context.Context, fn func(tx kv.Tx) error) error {
	if s.closed.Load() {
		return errClosed
	}
	return kv.Retry(ctx, "rediskv: "+s.name, s.retryTimeout, func() (kv.Class, error) {
		f, class, err := s.freeze(ctx)
		if err != nil {
			return class, err
		}
		defer f.release(ctx)
		return s.exclusiveAttempt(ctx, f.token, fn)
	})
}

// exclusiveAttempt runs fn once under the freeze of token and commits.
func (s *Store) exclusiveAttempt(ctx context.Context, token string, fn func(kv.Tx) error) (kv.Class, error) {
	class, result := kv.Fatal, error(nil)
	var routing []string
	if s.cluster {
		routing = []string{s.keys.route()} // picks the namespace's node
	}
	err := s.client.Watch(ctx, func(rtx *redis.Tx) error {
		t := &tx{s: s, ctx: ctx, rtx: rtx, token: token, watched: map[string]bool{}}
		class, result = t.finish(fn(t))
		return nil
	}, routing...)
	if err != nil {
		return classify(err), s.wrap("exclusive", err)
	}
	return class, result
}

// commitExclusive applies an Exclusive's writes in chunks of
// exclusiveChunk, then deletes the freeze, all in one MULTI/EXEC and only
// if the freeze still holds the token. With no writes it only checks and
// deletes the freeze, which tells whether fn's reads were of one state.
// Nothing was WATCHed, so the commit needs not run on the connection of
// the reads: it runs on the bulk client, whose timeouts allow for its
// size.
func (t *tx) commitExclusive() error {
	keys := t.sortedWrites()
	if t.s.track.running.Load() {
		rkeys, _ := t.writtenRKeys()
		defer t.s.track.wrote(rkeys)
	}
	var evals []*redis.Cmd
	var release *redis.Cmd
	_, err := t.s.bulk.get().TxPipelined(t.ctx, func(p redis.Pipeliner) error {
		head := []any{t.s.keys.base, t.token, 0}
		for i := 0; i < len(keys); i += exclusiveChunk {
			args := t.writeArgs(head, keys[i:min(i+exclusiveChunk, len(keys))])
			evals = append(evals, p.Eval(t.ctx, commitScript, []string{t.s.keys.route()}, args...))
		}
		release = p.Eval(t.ctx, releaseScript, []string{t.s.keys.freeze()}, t.token)
		return nil
	})
	if err != nil {
		return err
	}
	for _, eval := range evals {
		if err := scriptResult(eval); err != nil {
			return err
		}
	}
	if n, err := release.Int(); err != nil {
		return err
	} else if n != 1 {
		return errFreezeLost
	}
	return nil
}

// freezeHold is one Exclusive attempt's freeze, kept alive by a goroutine.
type freezeHold struct {
	s     *Store
	token string
	stop  chan struct{}
	done  chan struct{}
}

// freeze sets the freeze key to a new token, or reports a conflict if
// another Exclusive holds it.
func (s *Store) freeze(ctx context.Context) (*freezeHold, kv.Class, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	f := &freezeHold{s: s, token: hex.EncodeToString(b[:]), stop: make(chan struct{}), done: make(chan struct{})}
	ok, err := s.client.SetNX(ctx, s.keys.freeze(), f.token, s.freezeTTL).Result()
	if err != nil {
		close(f.done)
		f.release(ctx) // the SET may have been applied
		return nil, classify(err), s.wrap("freeze", err)
	}
	if !ok {
		return nil, kv.Conflict, errors.New("rediskv: another Exclusive transaction holds the volume")
	}
	go f.refresh()
	return f, kv.Fatal, nil
}

// refresh extends the freeze's TTL every third of it until stopped or
// until the freeze is found gone (the commit then refuses).
func (f *freezeHold) refresh() {
	defer close(f.done)
	ttl := f.s.freezeTTL
	tick := time.NewTicker(ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), ttl/3)
		n, err := f.s.client.Eval(ctx, refreshScript, []string{f.s.keys.freeze()}, f.token, ttl.Milliseconds()).Int()
		cancel()
		if err == nil && n == 0 {
			return
		}
	}
}

// release stops the refresh and deletes the freeze if it still holds the
// token (after a commit it is already gone), even if ctx has ended. A
// failure leaves the freeze to lapse within its TTL.
func (f *freezeHold) release(ctx context.Context) {
	select {
	case <-f.done:
	default:
		close(f.stop)
		<-f.done
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = f.s.client.Eval(ctx, releaseScript, []string{f.s.keys.freeze()}, f.token).Err()
}

// bulkClient is a second client, with bulkTimeout, made on first use.
type bulkClient struct {
	opts   redis.UniversalOptions
	mu     sync.Mutex
	client redis.UniversalClient
}

func (b *bulkClient) get() redis.UniversalClient {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.client == nil {
		opts := b.opts
		opts.ReadTimeout, opts.WriteTimeout = bulkTimeout, bulkTimeout
		opts.PoolSize = 2
		b.client = redis.NewUniversalClient(&opts)
	}
	return b.client
}

func (b *bulkClient) close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.client == nil {
		return nil
	}
	return b.client.Close()
}
