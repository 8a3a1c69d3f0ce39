package sqlkv

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shoal/internal/meta/kv"
)

// queued waits until n Txns wait in s's committer.
func queued(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.group.mu.Lock()
		q := len(s.group.queue)
		s.group.mu.Unlock()
		if q >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d Txns queued, want %d", q, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSQLiteGroupCommit queues Txns behind one that holds the writer, so
// that they run as one group: increments of one counter must all count
// (each member sees the ones before it), a member that fails must leave
// no write and get its own error, one that fails only in the group (a
// conflict) must commit alone, one that panics must panic in its own
// goroutine, and none of them may fail or undo another.
func TestSQLiteGroupCommit(t *testing.T) {
	s := openSQLite(t).(*Store)
	defer s.Close()
	ctx := context.Background()
	hold, held := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := s.Txn(ctx, func(tx kv.Tx) error {
			close(held)
			<-hold
			tx.Set([]byte("first"), []byte("1"))
			return nil
		})
		if err != nil {
			t.Errorf("holder: %v", err)
		}
	}()
	<-held
	errBoom := errors.New("boom")
	var conflicted atomic.Bool
	members := map[string]func(kv.Tx) error{
		"inc0": increment([]byte("ctr")),
		"inc1": increment([]byte("ctr")),
		"inc2": increment([]byte("ctr")),
		"inc3": increment([]byte("ctr")),
		"fails": func(tx kv.Tx) error {
			tx.Set([]byte("bad"), []byte("x"))
			tx.Delete([]byte("first"))
			return errBoom
		},
		"conflicts once": func(tx kv.Tx) error {
			tx.Set([]byte("retried"), []byte("x"))
			if !conflicted.Swap(true) {
				return kv.ErrConflict
			}
			return nil
		},
		"panics": func(tx kv.Tx) error {
			tx.Set([]byte("panicked"), []byte("x"))
			panic("member panic")
		},
		"bad statement": func(t kv.Tx) error {
			t.Set([]byte("stmt"), []byte("x"))
			t.(*tx).fail(errors.New("a statement failed"))
			return nil
		},
	}
	results := make(map[string]any, len(members))
	var mu sync.Mutex
	for name, fn := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res any
			defer func() {
				if r := recover(); r != nil {
					res = fmt.Sprint("panic: ", r)
				}
				mu.Lock()
				results[name] = res
				mu.Unlock()
			}()
			res = s.Txn(ctx, fn)
		}()
	}
	queued(t, s, len(members))
	close(hold)
	wg.Wait()
	for name, res := range results {
		switch name {
		case "fails":
			if err, _ := res.(error); !errors.Is(err, errBoom) {
				t.Errorf("%s: %v, want %v", name, res, errBoom)
			}
		case "panics":
			if res != "panic: member panic" {
				t.Errorf("%s: %v, want the panic", name, res)
			}
		case "bad statement":
			if err, _ := res.(error); err == nil {
				t.Errorf("%s: committed, want its error", name)
			}
		default:
			if res != nil {
				t.Errorf("%s: %v", name, res)
			}
		}
	}
	if v := mustGet(t, s, []byte("ctr")); binary.BigEndian.Uint64(v) != 4 {
		t.Errorf("counter = %d, want 4", binary.BigEndian.Uint64(v))
	}
	for k, want := range map[string]bool{"first": true, "retried": true, "bad": false, "panicked": false, "stmt": false} {
		if got := mustGet(t, s, []byte(k)) != nil; got != want {
			t.Errorf("key %q present: %v, want %v", k, got, want)
		}
	}
	if n := s.group.grouped.Load(); n < 4 {
		t.Errorf("%d members committed in a group, want at least the 4 increments", n)
	}
}

// TestSQLiteGroupCommitStress runs writers of one shared counter and of
// keys of their own, some of whose Txns fail, beside readers that check
// that a counter and its mirror key (written together) always agree:
// every successful Txn counts exactly once, no failed one counts, and
// no View sees half of one. Run it under -race.
func TestSQLiteGroupCommitStress(t *testing.T) {
	s := openSQLite(t).(*Store)
	defer s.Close()
	ctx := context.Background()
	const writers, each = 6, 150
	errSkip := errors.New("skip")
	var ok atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var readerErr atomic.Value
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			err := s.View(ctx, func(tx kv.Tx) error {
				a, err := tx.Get([]byte("ctr"))
				if err != nil {
					return err
				}
				b, err := tx.Get([]byte("mirror"))
				if err != nil {
					return err
				}
				if string(a) != string(b) {
					return fmt.Errorf("counter %x, mirror %x", a, b)
				}
				return nil
			})
			if err != nil {
				readerErr.Store(err)
				return
			}
		}
	}()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := []byte(fmt.Sprintf("own%d", w))
			for i := range each {
				err := s.Txn(ctx, func(tx kv.Tx) error {
					if err := increment([]byte("ctr"))(tx); err != nil {
						return err
					}
					v, err := tx.Get([]byte("ctr"))
					if err != nil {
						return err
					}
					tx.Set([]byte("mirror"), v)
					if err := increment(own)(tx); err != nil {
						return err
					}
					if i%7 == 3 {
						return errSkip
					}
					return nil
				})
				switch {
				case err == nil:
					ok.Add(1)
				case !errors.Is(err, errSkip):
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if err := readerErr.Load(); err != nil {
		t.Fatalf("a View saw part of a Txn: %v", err)
	}
	if got := binary.BigEndian.Uint64(mustGet(t, s, []byte("ctr"))); int64(got) != ok.Load() {
		t.Errorf("counter = %d, %d Txns succeeded", got, ok.Load())
	}
	var sum uint64
	for w := range writers {
		sum += binary.BigEndian.Uint64(mustGet(t, s, []byte(fmt.Sprintf("own%d", w))))
	}
	if int64(sum) != ok.Load() {
		t.Errorf("own keys sum to %d, %d Txns succeeded", sum, ok.Load())
	}
	t.Logf("%d of %d Txns committed in groups", s.group.grouped.Load(), ok.Load())
}
