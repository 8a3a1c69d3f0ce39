package vfs

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shoal/internal/meta"
)

// seqFetch is a fetch that numbers its calls in the order they start and
// returns the number as the length.
type seqFetch struct {
	started atomic.Uint64
	hold    chan struct{} // while open, fetches block (nil: never)
	entered chan struct{} // gets a value as each fetch starts
	err     error
}

func (s *seqFetch) fetch(context.Context) (meta.Attr, error) {
	n := s.started.Add(1)
	if s.entered != nil {
		s.entered <- struct{}{}
	}
	if s.hold != nil {
		<-s.hold
	}
	return meta.Attr{Length: n}, s.err
}

func TestAttrRoundsLoneRead(t *testing.T) {
	var r attrRounds
	s := &seqFetch{}
	for i := uint64(1); i <= 3; i++ {
		a, err := r.get(context.Background(), s.fetch)
		if err != nil || a.Length != i {
			t.Fatalf("call %d: %+v, %v; want a fetch of its own", i, a, err)
		}
	}
}

// TestAttrRoundsShareAndStayFresh: reads arriving while a fetch runs share
// one later fetch, and no read gets a fetch that started before it did.
func TestAttrRoundsShareAndStayFresh(t *testing.T) {
	var r attrRounds
	s := &seqFetch{hold: make(chan struct{}), entered: make(chan struct{}, 100)}
	check := func(before uint64, a meta.Attr, err error) error {
		if err != nil {
			return err
		}
		if a.Length <= before {
			return errors.New("got a fetch that started before the read")
		}
		return nil
	}
	errs := make(chan error, 100)
	var wg sync.WaitGroup
	read := func() {
		defer wg.Done()
		before := s.started.Load()
		a, err := r.get(context.Background(), s.fetch)
		errs <- check(before, a, err)
	}
	wg.Add(1)
	go read()
	<-s.entered // the first fetch runs and holds
	const followers = 20
	wg.Add(followers)
	for range followers {
		go read()
	}
	time.Sleep(50 * time.Millisecond) // let them queue behind it
	close(s.hold)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := s.started.Load(); n > 3 {
		t.Errorf("%d fetches for 1+%d reads, want them shared (2, or 3 with a late arrival)", n, followers)
	}
}

// TestAttrRoundsConcurrentFresh hammers get from many goroutines with a
// fetch that takes a little time, checking freshness for every call.
func TestAttrRoundsConcurrentFresh(t *testing.T) {
	var r attrRounds
	var started atomic.Uint64
	fetch := func(context.Context) (meta.Attr, error) {
		n := started.Add(1)
		time.Sleep(100 * time.Microsecond)
		return meta.Attr{Length: n}, nil
	}
	var wg sync.WaitGroup
	var stale, calls atomic.Int64
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				before := started.Load()
				a, err := r.get(context.Background(), fetch)
				calls.Add(1)
				if err != nil || a.Length <= before {
					stale.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if stale.Load() != 0 {
		t.Fatalf("%d of %d reads got a stale or failed fetch", stale.Load(), calls.Load())
	}
	t.Logf("%d reads, %d fetches", calls.Load(), started.Load())
}

func TestAttrRoundsErrorAndCancel(t *testing.T) {
	var r attrRounds
	boom := errors.New("engine away")
	s := &seqFetch{hold: make(chan struct{}), entered: make(chan struct{}, 10), err: boom}
	first := make(chan error, 1)
	go func() {
		_, err := r.get(context.Background(), s.fetch)
		first <- err
	}()
	<-s.entered
	// A leader (joins the queued round and will run it) and a follower
	// that gives up.
	leader := make(chan error, 1)
	go func() {
		_, err := r.get(context.Background(), s.fetch)
		leader <- err
	}()
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		_, err := r.get(ctx, s.fetch)
		gaveUp <- err
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled follower: %v", err)
	}
	close(s.hold)
	if err := <-first; !errors.Is(err, boom) {
		t.Fatalf("first read: %v, want the fetch's error", err)
	}
	if err := <-leader; !errors.Is(err, boom) {
		t.Fatalf("queued read: %v, want the fetch's error", err)
	}
	// Nothing is left running: the next read fetches at once.
	s.hold, s.err = nil, nil
	if _, err := r.get(context.Background(), s.fetch); err != nil {
		t.Fatal(err)
	}
}
