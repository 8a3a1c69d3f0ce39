package rediskv

import (
	"context"
	"testing"

	"shoal/internal/meta/kv"
)

// TestGuessedAbsentOneRoundTrip: a write transaction whose first read
// round is keys this client has just read plus keys guessed absent
// (kvmeta's unlink of a file with data: the entry, the attributes and
// the slices' reference counts) makes one round trip, its commit.
func TestGuessedAbsentOneRoundTrip(t *testing.T) {
	s := openRedis(t)
	defer s.Close()
	kv.GuessAbsent(s, []byte("R"))
	ctx := context.Background()
	setKey(t, s, "guess-a", "1")
	_ = getKey(t, s, "guess-a") // now a seed
	keys := [][]byte{[]byte("guess-a"), []byte("R1"), []byte("R2")}
	var rt roundTrips
	s.(*Store).client.AddHook(&rt)
	var got [][]byte
	err := s.Txn(ctx, func(tx kv.Tx) (err error) {
		if got, err = kv.GetMany(tx, keys); err != nil {
			return err
		}
		tx.Set([]byte("guess-b"), got[0])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := rt.n.Load(); n != 1 {
		t.Errorf("the write transaction made %d round trips, want 1 (its commit)", n)
	}
	if got[1] != nil || got[2] != nil || string(got[0]) != "1" {
		t.Errorf("read %q, want [1 nil nil]", got)
	}
}

// TestGuessedAbsentWrong: a key guessed absent that is present fails the
// commit (nothing is written on the guess), and the transaction runs
// again on the stored value.
func TestGuessedAbsentWrong(t *testing.T) {
	s := openRedis(t)
	defer s.Close()
	kv.GuessAbsent(s, []byte("R"))
	ctx := context.Background()
	setKey(t, s, "guess-a", "1")
	_ = getKey(t, s, "guess-a")
	setKey(t, s, "R1", "3")
	s.(*Store).seeds.drop([]string{s.(*Store).keys.value([]byte("R1"))})
	attempts := 0
	var seen []byte
	err := s.Txn(ctx, func(tx kv.Tx) error {
		attempts++
		vals, err := kv.GetMany(tx, [][]byte{[]byte("guess-a"), []byte("R1")})
		if err != nil {
			return err
		}
		seen = vals[1]
		tx.Set([]byte("guess-b"), append([]byte("saw "), vals[1]...))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if attempts != 2 || string(seen) != "3" {
		t.Errorf("%d attempts, last saw %q; want 2 attempts, the last seeing 3", attempts, seen)
	}
	if got := getKey(t, s, "guess-b"); got != "saw 3" {
		t.Errorf("guess-b = %q, want %q: the wrong guess was committed", got, "saw 3")
	}
}
