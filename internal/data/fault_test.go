package data

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"shoal/internal/object"
)

// TestFaultsNeverLoseOrCorrupt drives random writes through a store that
// fails, dies mid-body, breaks reads and goes down, over the volume's real
// wrapper stack (checksums over retries). Whatever fails, a Flush that
// returns nil means the data reads back exactly; a failed Flush keeps the
// data for the next one.
func TestFaultsNeverLoseOrCorrupt(t *testing.T) {
	faults := object.WithFaults(newMem())
	stack := object.WithChecksum(object.WithRetry(faults, 2, time.Millisecond))
	s := newTestStore(t, stack, Config{BlockSize: 8192, BufferSize: 512 << 10})
	e := newEngine(nil)
	w := s.NewWriter(1, e.newID, e.committer(1))
	rng := rand.New(rand.NewPCG(5, 5))
	var m model
	failed := 0
	for round := 0; round < 60; round++ {
		for i := 0; i < 8; i++ {
			off := uint64(rng.IntN(300_000))
			p := pattern(byte(round*8+i), off, 1+rng.IntN(30_000))
			m.write(off, p)
			writeAll(t, w, off, p)
		}
		inject(faults, rng)
		for attempt := 0; ; attempt++ {
			err := w.Flush(context.Background())
			if err == nil {
				break
			}
			failed++
			if attempt > 50 {
				t.Fatalf("round %d: flush keeps failing: %v", round, err)
			}
			faults.Reset() // the outage ends; the next Flush must recover
		}
		faults.BreakReads(rng.IntN(2), int64(rng.IntN(20_000))) // one break: the retry budget (2) absorbs it
		got, err := e.readFileE(s.NewReader(1), 1, 0, len(m.data))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		mustEqual(t, fmt.Sprintf("round %d", round), got, m.data)
		faults.Reset()
	}
	if failed == 0 {
		t.Fatal("no Flush ever failed: the faults were not injected")
	}
}

// inject arms one random kind of fault.
func inject(f *object.FaultStore, rng *rand.Rand) {
	switch rng.IntN(5) {
	case 0:
		f.FailPuts(1 + rng.IntN(12))
	case 1:
		f.DiePuts(1+rng.IntN(6), -1)
	case 2:
		f.SetDown(true)
	case 3:
		f.SetLatency(time.Duration(rng.IntN(2000)) * time.Microsecond)
	}
}
