package multihost

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// snapModel is the promised state of the files f0..f{n-1} after each step
// of a random sequence of writes (a whole new file renamed over the name),
// renames and unlinks, made by two mounts at random: state[k] maps each
// existing name to the step whose write it holds. The temporary files of
// writes are not part of the model.
type snapModel struct {
	n     int
	state []map[string]int
}

// step k's content: its number, then bytes determined by it.
func stepContent(k int) []byte {
	size := 16 + (k*7919)%(3<<20)
	if k%5 != 0 {
		size = 16 + (k*104729)%20000
	}
	b := randBytes(uint64(k), size)
	binary.LittleEndian.PutUint64(b, uint64(k))
	return b
}

// run makes steps on the mounts, in turn, until stop closes; each step
// is done (closed, renamed, unlinked) before the next starts, so the
// engine holds the steps in this order.
func (m *snapModel) run(ms []*testutil.Mount, seed uint64, stop <-chan struct{}) error {
	r := rand.New(rand.NewPCG(seed, 7))
	cur := map[string]int{}
	m.state = []map[string]int{maps.Clone(cur)}
	for k := 1; ; k++ {
		select {
		case <-stop:
			return nil
		default:
		}
		mnt := ms[r.IntN(len(ms))]
		a, b := fmt.Sprintf("f%d", r.IntN(m.n)), fmt.Sprintf("f%d", r.IntN(m.n))
		switch op := r.IntN(10); {
		case op < 7:
			// Written whole under a temporary name, then renamed in
			// place: the step's change to the f names is the rename.
			tmp := mnt.Path(fmt.Sprintf("tmp%d", k))
			if err := writeFileErr(tmp, stepContent(k), false); err != nil {
				return fmt.Errorf("step %d: write %s on %s: %w", k, tmp, mnt.Dir, err)
			}
			if err := os.Rename(tmp, mnt.Path(a)); err != nil {
				return fmt.Errorf("step %d: rename %s to %s on %s: %w", k, tmp, a, mnt.Dir, err)
			}
			cur[a] = k
		case op < 9:
			err := os.Rename(mnt.Path(a), mnt.Path(b))
			if _, ok := cur[a]; ok != (err == nil) {
				return fmt.Errorf("step %d: rename %s %s on %s: %v (model has %s: %v)", k, a, b, mnt.Dir, err, a, ok)
			}
			if err == nil && a != b {
				cur[b] = cur[a]
				delete(cur, a)
			}
		default:
			err := os.Remove(mnt.Path(a))
			if _, ok := cur[a]; ok != (err == nil) {
				return fmt.Errorf("step %d: unlink %s on %s: %v", k, a, mnt.Dir, err)
			}
			delete(cur, a)
		}
		m.state = append(m.state, maps.Clone(cur))
	}
}

// check reads snapshot dir and finds the step whose state it shows: it
// fails t unless some step's state matches name for name, byte for byte.
func (m *snapModel) check(t *testing.T, dir string) int {
	t.Helper()
	seen := map[string]int{}
	for i := range m.n {
		name := fmt.Sprintf("f%d", i)
		b, err := os.ReadFile(dir + "/" + name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil || len(b) < 8 {
			t.Fatalf("%s/%s: %d bytes, %v", dir, name, len(b), err)
		}
		k := int(binary.LittleEndian.Uint64(b))
		if !bytes.Equal(b, stepContent(k)) {
			t.Fatalf("%s/%s: not the bytes step %d wrote: %s", dir, name, k, diffSummary(b, stepContent(k)))
		}
		seen[name] = k
	}
	for k, st := range m.state {
		if maps.Equal(st, seen) {
			return k
		}
	}
	t.Fatalf("%s is no state the volume was ever in: %v", dir, seen)
	return -1
}

// TestSnapshotPointInTime: two mounts run a random sequence of writes,
// renames and unlinks while `shoal snapshot create` runs three times and
// `shoal gc` runs beside it; each snapshot, read through the other mount,
// shows exactly the state after one step of the sequence (nothing from a
// later step, nothing missing from an earlier one), and stays so after
// the live files change and gc collects. Snapshots are read-only through
// every mount, and deleting one frees nothing the others show.
func TestSnapshotPointInTime(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		v := b.newVolume(t)
		// Strict: a name one mount made is there for the other's next
		// step at once, so the two mounts' steps form one sequence.
		ms := mountN(t, v, 2, "--strict")
		m := &snapModel{n: 6}
		stop, done := make(chan struct{}), make(chan struct{})
		seed := uint64(time.Now().UnixNano())
		var runErr error
		go func() {
			defer close(done)
			runErr = m.run(ms, seed, stop)
		}()
		var gcs sync.WaitGroup
		gcs.Add(1)
		go func() { // gc beside snapshot creation (default grace: only freed objects go)
			defer gcs.Done()
			for range 3 {
				if res := testutil.Run(t, "gc", v.MetaURL, "--delete-freed"); res.Code != 0 {
					t.Errorf("gc during snapshots: exit %d\n%s", res.Code, res.Stderr)
				}
			}
		}()
		names := []string{"s1", "s2", "s3"}
		for _, name := range names {
			time.Sleep(700 * time.Millisecond)
			testutil.MustRun(t, "snapshot", "create", v.MetaURL, name)
		}
		time.Sleep(300 * time.Millisecond)
		close(stop)
		<-done
		gcs.Wait()
		if runErr != nil {
			t.Fatalf("seed %d: %v", seed, runErr)
		}
		if t.Failed() {
			return
		}
		steps := map[string]int{}
		for _, name := range names {
			steps[name] = m.check(t, ms[1].Path(".snapshots", name))
		}
		t.Logf("%d steps; snapshots show steps %v", len(m.state)-1, steps)
		if steps["s1"] > steps["s2"] || steps["s2"] > steps["s3"] || steps["s3"] == 0 {
			t.Fatalf("snapshots out of order or empty: %v", steps)
		}

		// Read-only through the mounts.
		snap := ms[0].Path(".snapshots", "s3")
		wantErrnoIs(t, os.WriteFile(snap+"/new", []byte("x"), 0o644), syscall.EROFS, "create in a snapshot")
		wantErrnoIs(t, os.Mkdir(ms[0].Path(".snapshots", "mine"), 0o755), syscall.EROFS, "mkdir in /.snapshots")
		if _, ok := m.state[steps["s3"]]["f0"]; ok {
			f, err := os.OpenFile(snap+"/f0", os.O_WRONLY, 0)
			if err == nil {
				f.Close()
			}
			wantErrnoIs(t, err, syscall.EROFS, "open a snapshot file for writing")
			wantErrnoIs(t, os.Remove(snap+"/f0"), syscall.EROFS, "unlink in a snapshot")
		}

		// The live tree changes; collect; the snapshots hold.
		for i := range m.n {
			_ = os.Remove(ms[0].Path(fmt.Sprintf("f%d", i)))
		}
		testutil.MustRun(t, "snapshot", "delete", v.MetaURL, "s2")
		testutil.MustRun(t, "gc", v.MetaURL, "--delete-freed")
		for _, name := range []string{"s1", "s3"} {
			if got := m.check(t, ms[1].Path(".snapshots", name)); got != steps[name] {
				t.Fatalf("%s shows step %d after gc, %d before", name, got, steps[name])
			}
		}
		if _, err := eventually(5*time.Second, func() error { return gone(ms[1].Path(".snapshots", "s2")) }); err != nil {
			t.Fatalf("deleted snapshot: %v", err)
		}
		if res := testutil.Run(t, "fsck", v.MetaURL); res.Code != 0 {
			t.Fatalf("fsck after snapshots: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
		}
	})
}

func wantErrnoIs(t *testing.T, err error, want syscall.Errno, what string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: %v, want %v", what, err, want)
	}
}
