package rediskv

import (
	"context"
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
