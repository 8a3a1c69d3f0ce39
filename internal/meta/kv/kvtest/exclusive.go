package kvtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"shoal/internal/meta/kv"
)

// Keys of testExclusiveHoldsWritersOff: the writers' sequence number, its
// slots, the writers' log, and the marker Exclusive writes.
var (
	exSeq    = key('E', 0, "seq")
	exMarker = key('E', 0, "marker")
)

const exSlots = 8

func exSlot(i uint64) []byte { return key('E', 1, fmt.Sprint(i)) }
func exLog(n uint64) []byte  { return key('E', 2, fmt.Sprintf("%08d", n)) }

// exWrite is one writer transaction: it takes the next sequence number n,
// stores it in slot n%exSlots, and logs under n the marker it saw ("m"
// followed by the marker's value, empty if there was none).
func exWrite(ctx context.Context, s kv.Store) error {
	return s.Txn(ctx, func(tx kv.Tx) error {
		n, err := readU64(tx, exSeq)
		if err != nil {
			return err
		}
		marker, err := tx.Get(exMarker)
		if err != nil {
			return err
		}
		n++
		tx.Set(exSeq, u64(n))
		tx.Set(exSlot(n%exSlots), u64(n))
		tx.Set(exLog(n), append([]byte("m"), marker...))
		return nil
	})
}

// exRun is what one run of the Exclusive fn saw.
type exRun struct {
	first, last uint64          // the sequence at fn's first and last read
	slots       [exSlots]uint64 // the slots, read between them
	peeks       []uint64        // the committed sequence, read outside fn
	peekErr     error
}

func (r *exRun) String() string {
	return fmt.Sprintf("{sequence %d..%d, slots %v, committed sequence seen meanwhile %v}", r.first, r.last, r.slots, r.peeks)
}

// peek sleeps, then reads the committed sequence through peer, outside fn's
// transaction: a write committed while fn runs shows up here.
func (r *exRun) peek(ctx context.Context, peer kv.Store) {
	time.Sleep(100 * time.Millisecond)
	v, err := kv.GetOne(ctx, peer, exSeq)
	if err != nil {
		r.peekErr = err
		return
	}
	n := uint64(0)
	if len(v) == 8 {
		n = binary.BigEndian.Uint64(v)
	}
	r.peeks = append(r.peeks, n)
}

// testExclusiveHoldsWritersOff runs two writers, one on s and one on a
// peer store (another machine), that keep taking sequence numbers, while
// kv.Exclusive reads the sequence and its slots slowly (about a second),
// checking through Views of the peer between reads that the committed
// sequence does not move, and writes a marker. The writers must wait, not
// fail, and go on once Exclusive returns; their log must show that every
// transaction before the marker saw none and every one after saw it.
func testExclusiveHoldsWritersOff(t *testing.T, s, peer kv.Store) {
	ctx := ctxFor(t)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w, ws := range []kv.Store{s, peer} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for after := 0; after < 10; { // 10 commits after Exclusive
				if err := exWrite(ctx, ws); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				select {
				case <-done:
					after++
				default:
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	waitForSequence(t, ctx, peer, 20)

	runs, err := runExclusive(ctx, s, peer)
	close(done)
	wg.Wait()
	final := runs[len(runs)-1]
	if err != nil {
		t.Fatalf("Exclusive: %v (%d runs of fn, the last saw %v)", err, len(runs), final)
	}
	checkExclusiveRun(t, final, len(runs))
	checkExclusiveLog(t, s, final.first)
}

// waitForSequence waits until the writers have committed n transactions.
func waitForSequence(t *testing.T, ctx context.Context, s kv.Store, n uint64) {
	t.Helper()
	for {
		v, err := kv.GetOne(ctx, s, exSeq)
		if err != nil {
			t.Fatalf("read sequence: %v", err)
		}
		if len(v) == 8 && binary.BigEndian.Uint64(v) >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runExclusive runs the slow Exclusive reader and returns what each run of
// its fn saw.
func runExclusive(ctx context.Context, s, peer kv.Store) ([]*exRun, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var runs []*exRun
	err := kv.Exclusive(ctx, s, func(tx kv.Tx) error {
		r := &exRun{}
		runs = append(runs, r)
		var err error
		if r.first, err = readU64(tx, exSeq); err != nil {
			return err
		}
		for i := range r.slots {
			r.peek(ctx, peer)
			if r.slots[i], err = readU64(tx, exSlot(uint64(i))); err != nil {
				return err
			}
		}
		r.peek(ctx, peer)
		if r.last, err = readU64(tx, exSeq); err != nil {
			return err
		}
		tx.Set(exMarker, u64(r.first))
		r.peek(ctx, peer)
		return nil
	})
	if len(runs) == 0 {
		runs = append(runs, &exRun{})
	}
	return runs, err
}

// checkExclusiveRun checks that the committing run of fn saw one state,
// and that no write committed while it ran.
func checkExclusiveRun(t *testing.T, r *exRun, runs int) {
	t.Helper()
	if r.peekErr != nil {
		t.Errorf("reading the committed sequence during Exclusive: %v", r.peekErr)
	}
	for _, p := range r.peeks {
		if p != r.first {
			t.Errorf("a write committed while Exclusive ran: its first read saw sequence %d, reads outside it saw %v (run %d of fn)", r.first, r.peeks, runs)
			break
		}
	}
	if r.last != r.first {
		t.Errorf("the sequence changed under Exclusive: %d at its first read, %d at its last", r.first, r.last)
	}
	for i, got := range r.slots {
		want := uint64(0)
		if r.first >= uint64(i) {
			want = r.first - (r.first-uint64(i))%exSlots
		}
		if got != want {
			t.Errorf("Exclusive saw slot %d = %d at sequence %d, want %d: not one state (%v)", i, got, r.first, want, r)
			break
		}
	}
}

// checkExclusiveLog checks the writers' log: numbers 1..n without a gap,
// the marker unseen up to Exclusive's sequence and seen after it.
func checkExclusiveLog(t *testing.T, s kv.Store, at uint64) {
	t.Helper()
	log := scan(t, s, prefix('E', 2), nil, 0)
	if uint64(len(log)) <= at {
		t.Fatalf("writers' log has %d entries, want more than Exclusive's sequence %d", len(log), at)
	}
	marker := "m" + string(u64(at))
	for i, p := range log {
		n := uint64(i + 1)
		if p.k != string(exLog(n)) {
			t.Fatalf("writers' log entry %d is %q, want %q: a gap in the sequence", i, p.k, exLog(n))
		}
		want := "m"
		if n > at {
			want = marker
		}
		if p.v != want {
			t.Fatalf("writer transaction %d saw marker %q, want %q (Exclusive ran at sequence %d)", n, p.v, want, at)
		}
	}
}

// testExclusiveLarge reads 50,000 keys under 50 prefixes with paged Scans
// in one Exclusive and copies each under another key kind, while a writer
// on the peer store waits for it.
func testExclusiveLarge(t *testing.T, s, peer kv.Store) {
	const prefixes, per = 50, 1000
	ctx := ctxFor(t)
	val := func(p, i int) []byte { return fmt.Appendf(nil, "value %03d/%04d %040d", p, i, p*per+i) }
	for p0 := 0; p0 < prefixes; p0 += 5 {
		err := s.Txn(ctx, func(tx kv.Tx) error {
			for p := p0; p < p0+5; p++ {
				for i := range per {
					tx.Set(key('X', uint64(p), fmt.Sprintf("%04d", i)), val(p, i))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("populate prefixes %d..: %v", p0, err)
		}
	}
	done := make(chan struct{})
	writer := make(chan error, 1)
	go func() {
		for {
			if err := exWrite(ctx, peer); err != nil {
				writer <- err
				return
			}
			select {
			case <-done:
				writer <- exWrite(ctx, peer)
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	var read int
	err := kv.Exclusive(ctx, s, func(tx kv.Tx) error {
		read = 0
		for p := range prefixes {
			var copies [][2][]byte
			err := tx.Scan(prefix('X', uint64(p)), nil, 0, func(k, v []byte) bool {
				copies = append(copies, [2][]byte{append([]byte{'Y'}, k[1:]...), v})
				return true
			})
			if err != nil {
				return err
			}
			for _, c := range copies {
				tx.Set(c[0], c[1])
			}
			read += len(copies)
		}
		return nil
	})
	close(done)
	if err != nil {
		t.Fatalf("Exclusive over %d keys: %v", prefixes*per, err)
	}
	t.Logf("Exclusive read and wrote %d keys in %v", read, time.Since(start).Round(time.Millisecond))
	if err := <-writer; err != nil {
		t.Errorf("writer beside a large Exclusive: %v", err)
	}
	if read != prefixes*per {
		t.Fatalf("Exclusive read %d keys, want %d", read, prefixes*per)
	}
	for p := range prefixes {
		got := scan(t, s, prefix('Y', uint64(p)), nil, 0)
		if len(got) != per {
			t.Fatalf("prefix %d: %d keys copied, want %d", p, len(got), per)
		}
		for i, kvp := range got {
			if !bytes.Equal([]byte(kvp.v), val(p, i)) {
				t.Fatalf("copy of key %d/%d = %q, want %q", p, i, kvp.v, val(p, i))
			}
		}
	}
}
