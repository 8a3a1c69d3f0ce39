package kvtest

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shoal/internal/meta/kv"
)

// u64 encodes n as a value; readU64 decodes it (absent = 0).
func u64(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

func readU64(tx kv.Tx, k []byte) (uint64, error) {
	v, err := tx.Get(k)
	if err != nil || v == nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(v), nil
}

// parallel runs fn(worker) in n goroutines and waits for them.
func parallel(n int, fn func(worker int)) {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i)
		}()
	}
	wg.Wait()
}

func testCounterIncrements(t *testing.T, s kv.Store) {
	const workers, rounds = 8, 50
	ctr := key('c', 1, "counter")
	ctx := ctxFor(t)
	parallel(workers, func(int) {
		for i := 0; i < rounds; i++ {
			err := s.Txn(ctx, func(tx kv.Tx) error {
				n, err := readU64(tx, ctr)
				tx.Set(ctr, u64(n+1))
				return err
			})
			if err != nil {
				t.Errorf("increment: %v", err)
				return
			}
		}
	})
	got := get(t, s, ctr)
	if got == nil || binary.BigEndian.Uint64(got) != workers*rounds {
		t.Fatalf("counter = %x after %d increments, lost updates", got, workers*rounds)
	}
}

// testTransferInvariant moves amounts between two keys whose sum must stay
// 100, while readers check the sum in Views.
func testTransferInvariant(t *testing.T, s kv.Store) {
	x, y := key('t', 1, "x"), key('t', 2, "y")
	set(t, s, x, u64(50), y, u64(50))
	ctx := ctxFor(t)
	var stop atomic.Bool
	var readers sync.WaitGroup
	for r := 0; r < 2; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for !stop.Load() {
				checkSum(ctx, t, s, x, y)
			}
		}()
	}
	parallel(4, func(w int) {
		for i := 0; i < 25; i++ {
			err := s.Txn(ctx, func(tx kv.Tx) error { return transfer(tx, x, y, uint64(w+i)%7) })
			if err != nil {
				t.Errorf("transfer: %v", err)
				return
			}
		}
	})
	stop.Store(true)
	readers.Wait()
	checkSum(ctx, t, s, x, y)
}

// transfer moves up to amount from a to b, keeping both non-negative.
func transfer(tx kv.Tx, a, b []byte, amount uint64) error {
	va, err := readU64(tx, a)
	if err != nil {
		return err
	}
	vb, err := readU64(tx, b)
	if err != nil {
		return err
	}
	if amount > va {
		amount = va
	}
	tx.Set(a, u64(va-amount))
	tx.Set(b, u64(vb+amount))
	return nil
}

// checkSum reads x and y in a View and checks their sum once the View
// returns: an optimistic store may run fn on a mixed state in an attempt
// it then discards, so only the final run's values count.
func checkSum(ctx context.Context, t *testing.T, s kv.Store, x, y []byte) {
	var vx, vy uint64
	err := s.View(ctx, func(tx kv.Tx) error {
		var err error
		if vx, err = readU64(tx, x); err != nil {
			return err
		}
		vy, err = readU64(tx, y)
		return err
	})
	if err != nil {
		t.Errorf("View: %v", err)
	} else if vx+vy != 100 {
		t.Errorf("View saw x=%d y=%d, sum %d, want 100", vx, vy, vx+vy)
	}
}

// testNoWriteSkew runs pairs of transactions that each read both flags and
// clear one if both are set. Under snapshot isolation both may commit and
// clear both flags; under serializability at least one flag survives.
func testNoWriteSkew(t *testing.T, s kv.Store) {
	ctx := ctxFor(t)
	for round := uint64(0); round < 20; round++ {
		a, b := key('w', round, "a"), key('w', round, "b")
		set(t, s, a, u64(1), b, u64(1))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, mine := range [][]byte{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if err := s.Txn(ctx, func(tx kv.Tx) error { return guardedClear(tx, a, b, mine) }); err != nil {
					t.Errorf("Txn: %v", err)
				}
			}()
		}
		close(start)
		wg.Wait()
		va, vb := binary.BigEndian.Uint64(get(t, s, a)), binary.BigEndian.Uint64(get(t, s, b))
		if va+vb != 1 {
			t.Fatalf("round %d: flags a=%d b=%d after two guarded clears, want exactly one cleared", round, va, vb)
		}
	}
}

// guardedClear clears mine if both a and b are set.
func guardedClear(tx kv.Tx, a, b, mine []byte) error {
	va, err := readU64(tx, a)
	if err != nil {
		return err
	}
	vb, err := readU64(tx, b)
	if err != nil {
		return err
	}
	time.Sleep(time.Millisecond) // widen the race window
	if va+vb == 2 {
		tx.Set(mine, u64(0))
	}
	return nil
}
