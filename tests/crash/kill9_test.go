package crash

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// workers is how many goroutines drive the workload, each in its own
// directory.
const workers = 3

// TestKill9Rounds kills the mount process with SIGKILL in the middle of a
// mixed workload, round after round, and checks every acknowledged state
// after each remount, then fsck and gc.
func TestKill9Rounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 1))
	vol := testutil.NewVolume(t)
	m := vol.Mount(t)
	ws := make([]*worker, workers)
	for i := range ws {
		name := fmt.Sprintf("w%d", i)
		if err := os.Mkdir(m.Path(name), 0o755); err != nil {
			t.Fatal(err)
		}
		ws[i] = &worker{rng: rand.New(rand.NewPCG(rng.Uint64(), uint64(i))), j: newJournal()}
	}
	n := rounds(t, 20)
	var ops, leaked int64
	for round := range n {
		m = crashRound(t, vol, m, ws, time.Duration(150+rng.IntN(1000))*time.Millisecond)
		for i, w := range ws {
			ops += int64(w.ops)
			for _, p := range w.j.verify(m.Path(fmt.Sprintf("w%d", i))) {
				t.Errorf("round %d: %s", round, p)
			}
		}
		leaked += checkAfterCrash(t, vol.MetaURL)
		if t.Failed() {
			t.Fatalf("round %d failed; seed above", round)
		}
	}
	t.Logf("%d rounds, %d acknowledged operations, %d leaked objects found and collected", n, ops, leaked)
	m.Unmount(t)
	if rep, res := runFsck(t, vol.MetaURL); res.Code != 0 || len(notDrift(rep.Meta.Problems)) > 0 || len(rep.Damaged) > 0 {
		t.Errorf("fsck after the last clean unmount: exit %d: %s", res.Code, res.Stdout)
	}
}

// crashRound runs the workers on m for d, kills the mount with SIGKILL,
// waits for the workers to fail, and mounts the volume again.
func crashRound(t *testing.T, vol *testutil.Volume, m *testutil.Mount, ws []*worker, d time.Duration) *testutil.Mount {
	var stop, killed atomic.Bool
	var wg sync.WaitGroup
	for i, w := range ws {
		w.dir, w.ops = m.Path(fmt.Sprintf("w%d", i)), 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.run(&stop); err != nil && !killed.Load() {
				t.Errorf("worker %d failed before the kill: %v", i, err)
			}
		}()
	}
	time.Sleep(d)
	killed.Store(true)
	m.Kill9(t)
	stop.Store(true)
	wg.Wait()
	return vol.Mount(t)
}
