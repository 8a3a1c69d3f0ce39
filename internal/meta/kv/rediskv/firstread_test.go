package rediskv

import (
	"context"
	"errors"
	"testing"

	"shoal/internal/meta/kv"
)

// TestFirstReadValidated changes the key a transaction read first (without
// a WATCH) behind its back, then lets the transaction go on either with a
// write (the commit script must catch it) or with another read (the next
// round trip must catch it). Either way fn must run again.
func TestFirstReadValidated(t *testing.T) {
	for _, then := range []string{"write", "read"} {
		t.Run(then, func(t *testing.T) {
			s := openRedis(t)
			defer s.Close()
			ctx := context.Background()
			a, b := []byte("first-a"), []byte("first-b")
			if err := s.Txn(ctx, func(tx kv.Tx) error { tx.Set(a, []byte("1")); return nil }); err != nil {
				t.Fatal(err)
			}
			runs := 0
			var sawA []byte
			err := s.Txn(ctx, func(tx kv.Tx) error {
				runs++
				v, err := tx.Get(a)
				if err != nil {
					return err
				}
				sawA = v
				if runs == 1 {
					err := s.Txn(ctx, func(other kv.Tx) error { other.Set(a, []byte("2")); return nil })
					if err != nil {
						t.Errorf("concurrent writer: %v", err)
					}
				}
				if then == "read" {
					_, err = tx.Get(b)
				}
				tx.Set(b, v)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if runs != 2 || string(sawA) != "2" {
				t.Fatalf("fn ran %d times, last saw a=%q; want 2 runs seeing a=2", runs, sawA)
			}
			var got []byte
			if err := s.View(ctx, func(tx kv.Tx) (err error) { got, err = tx.Get(b); return err }); err != nil || string(got) != "2" {
				t.Fatalf("b = %q, %v; want 2 (copied from the current a)", got, err)
			}
		})
	}
}

func TestFnConflictRetried(t *testing.T) {
	s := openRedis(t)
	defer s.Close()
	ctx := context.Background()
	runs := 0
	err := s.Txn(ctx, func(tx kv.Tx) error {
		runs++
		if runs == 1 {
			tx.Set([]byte("left-over"), []byte("x"))
			return kv.ErrConflict
		}
		tx.Set([]byte("kept"), []byte("y"))
		return nil
	})
	if err != nil || runs != 2 {
		t.Fatalf("Txn = %v after %d runs, want nil after 2", err, runs)
	}
	err = s.View(ctx, func(tx kv.Tx) error {
		a, err1 := tx.Get([]byte("left-over"))
		b, err2 := tx.Get([]byte("kept"))
		if a != nil || string(b) != "y" {
			t.Errorf("left-over=%q kept=%q: want the first run's write gone", a, b)
		}
		return errors.Join(err1, err2)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRedisCanceledContext(t *testing.T) {
	s := openRedis(t)
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Txn(ctx, func(tx kv.Tx) error { _, err := tx.Get([]byte("k")); return err })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Txn with a canceled ctx: %v, want context.Canceled", err)
	}
}
