package object

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// ErrInjected is the error a FaultStore returns (wrapped, with the op and
// key) for a fault it was told to inject. It is not Permanent, so retry
// wrappers retry it like any transient failure.
var ErrInjected = errors.New("injected fault")

// FaultStore wraps a Store and injects failures and latency on command,
// for tests of the layers above (write path, retries, crash recovery).
// Knobs may be changed at any time from any goroutine; each "next N"
// counter is consumed one per matching call.
type FaultStore struct {
	s Store

	mu       sync.Mutex
	failPuts int                   // fail the next N Puts before storing
	failGets int                   // fail the next N Gets
	failDels int                   // fail the next N Deletes
	failHead int                   // fail the next N Heads
	failList int                   // fail the next N Lists
	dieAfter int64                 // bytes a dying Put consumes; < 0: half of size
	diePuts  int                   // next N Puts die mid-body
	brkGets  int                   // next N Gets return bodies that break
	brkAfter int64                 // bytes a broken body delivers first
	putMatch func(key string) bool // fail every Put whose key matches
	getMatch func(key string) bool // fail every Get whose key matches
	down     bool                  // every call fails
	latency  time.Duration         // added before every call
	stats    FaultStats
}

// FaultStats counts calls that reached a FaultStore, and faults injected.
type FaultStats struct {
	Puts, Gets, Deletes, Heads, Lists int
	Injected                          int
}

var (
	_ Store     = (*FaultStore)(nil)
	_ Unwrapper = (*FaultStore)(nil)
)

// WithFaults wraps s; with no knob set it passes everything through.
func WithFaults(s Store) *FaultStore { return &FaultStore{s: s} }

// Unwrap returns the wrapped store.
func (f *FaultStore) Unwrap() Store { return f.s }

// String implements Store.
func (f *FaultStore) String() string { return "faults(" + f.s.String() + ")" }

// FailPuts makes the next n Puts fail without storing anything.
func (f *FaultStore) FailPuts(n int) { f.set(func() { f.failPuts = n }) }

// FailGets makes the next n Gets fail.
func (f *FaultStore) FailGets(n int) { f.set(func() { f.failGets = n }) }

// FailDeletes makes the next n Deletes fail without deleting.
func (f *FaultStore) FailDeletes(n int) { f.set(func() { f.failDels = n }) }

// FailHeads makes the next n Heads fail.
func (f *FaultStore) FailHeads(n int) { f.set(func() { f.failHead = n }) }

// FailLists makes the next n Lists fail.
func (f *FaultStore) FailLists(n int) { f.set(func() { f.failList = n }) }

// FailPutsWhere makes every Put whose key satisfies match fail until it is
// called again with nil. match runs under the FaultStore's lock and must
// not call the FaultStore.
func (f *FaultStore) FailPutsWhere(match func(key string) bool) {
	f.set(func() { f.putMatch = match })
}

// FailGetsWhere makes every Get whose key satisfies match fail until it is
// called again with nil. match runs under the FaultStore's lock and must
// not call the FaultStore.
func (f *FaultStore) FailGetsWhere(match func(key string) bool) {
	f.set(func() { f.getMatch = match })
}

// DiePuts makes the next n Puts "die mid-put": they consume after bytes of
// the body (after < 0: half of size), then fail without storing anything,
// as a crash or a dropped connection would.
func (f *FaultStore) DiePuts(n int, after int64) {
	f.set(func() { f.diePuts, f.dieAfter = n, after })
}

// BreakReads makes the next n successful Gets return bodies that deliver
// after bytes and then fail with ErrInjected, as a dropped connection would.
func (f *FaultStore) BreakReads(n int, after int64) {
	f.set(func() { f.brkGets, f.brkAfter = n, after })
}

// SetDown makes every call fail (true) until set back (false): the store
// is unreachable, as during a server restart.
func (f *FaultStore) SetDown(down bool) { f.set(func() { f.down = down }) }

// SetLatency adds d before every call (0 removes it). A call whose context
// ends during the delay returns the context's error.
func (f *FaultStore) SetLatency(d time.Duration) { f.set(func() { f.latency = d }) }

// Reset clears every knob (not the stats).
func (f *FaultStore) Reset() {
	f.set(func() {
		f.failPuts, f.failGets, f.failDels, f.failHead, f.failList = 0, 0, 0, 0, 0
		f.diePuts, f.brkGets, f.putMatch, f.getMatch = 0, 0, nil, nil
		f.down, f.latency = false, 0
	})
}

// Stats returns the counts so far.
func (f *FaultStore) Stats() FaultStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

func (f *FaultStore) set(fn func()) {
	f.mu.Lock()
	fn()
	f.mu.Unlock()
}

// take consumes one from *n if positive and reports whether it did.
func take(n *int) bool {
	if *n > 0 {
		*n--
		return true
	}
	return false
}

// enter counts the call in *stat, applies latency and reports whether the
// call must fail: the store is down, or decide (run under the lock, only
// when not down) consumed a fault.
func (f *FaultStore) enter(ctx context.Context, stat *int, decide func() bool) (bool, error) {
	f.mu.Lock()
	*stat++
	lat := f.latency
	fail := f.down || decide()
	if fail {
		f.stats.Injected++
	}
	f.mu.Unlock()
	if lat > 0 {
		t := time.NewTimer(lat)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-t.C:
		}
	}
	return fail, nil
}

// injected builds the error for an injected fault.
func injected(op, key string) error {
	return fmt.Errorf("faults: %s %q: %w", op, key, ErrInjected)
}

// Get implements Store.
func (f *FaultStore) Get(ctx context.Context, key string, off, limit int64) (io.ReadCloser, error) {
	var brk bool
	var after int64
	fail, err := f.enter(ctx, &f.stats.Gets, func() bool {
		if take(&f.failGets) || (f.getMatch != nil && f.getMatch(key)) {
			return true
		}
		brk, after = take(&f.brkGets), f.brkAfter
		return false
	})
	if err != nil {
		return nil, err
	}
	if fail {
		return nil, injected("get", key)
	}
	rc, err := f.s.Get(ctx, key, off, limit)
	if err != nil || !brk {
		return rc, err
	}
	return &brokenBody{rc: rc, left: after, key: key}, nil
}

// brokenBody delivers left bytes of rc, then fails.
type brokenBody struct {
	rc   io.ReadCloser
	left int64
	key  string
}

func (b *brokenBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("faults: get %q: body broke: %w", b.key, ErrInjected)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *brokenBody) Close() error { return b.rc.Close() }

// Head implements Store.
func (f *FaultStore) Head(ctx context.Context, key string) (Info, error) {
	fail, err := f.enter(ctx, &f.stats.Heads, func() bool { return take(&f.failHead) })
	if err != nil {
		return Info{}, err
	}
	if fail {
		return Info{}, injected("head", key)
	}
	return f.s.Head(ctx, key)
}

// Delete implements Store.
func (f *FaultStore) Delete(ctx context.Context, key string) error {
	fail, err := f.enter(ctx, &f.stats.Deletes, func() bool { return take(&f.failDels) })
	if err != nil {
		return err
	}
	if fail {
		return injected("delete", key)
	}
	return f.s.Delete(ctx, key)
}

// List implements Store.
func (f *FaultStore) List(ctx context.Context, prefix, after string, limit int) ([]Info, error) {
	fail, err := f.enter(ctx, &f.stats.Lists, func() bool { return take(&f.failList) })
	if err != nil {
		return nil, err
	}
	if fail {
		return nil, injected("list", prefix)
	}
	return f.s.List(ctx, prefix, after, limit)
}

// Put implements Store.
func (f *FaultStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	var die bool
	var after int64
	fail, err := f.enter(ctx, &f.stats.Puts, func() bool {
		if take(&f.failPuts) || (f.putMatch != nil && f.putMatch(key)) {
			return true
		}
		die, after = take(&f.diePuts), f.dieAfter
		return die
	})
	if err != nil {
		return err
	}
	if die {
		if after < 0 {
			after = size / 2
		}
		io.CopyN(io.Discard, r, min(after, size))
		return fmt.Errorf("faults: put %q died after %d of %d bytes: %w", key, min(after, size), size, ErrInjected)
	}
	if fail {
		return injected("put", key)
	}
	return f.s.Put(ctx, key, r, size)
}
