package journal

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRecoverStateAndLiveWrites(t *testing.T) {
	dir, j, must := newTestJournal(t)
	must2 := func(_ uint64, err error) { t.Helper(); must(err) }
	must(j.Session(7))
	must(j.Open(1, Handle{Ino: 100, Flags: 2, Tracked: true}))
	must(j.Open(2, Handle{Ino: 101}))
	must(j.OpenDir(3, 1))
	must(j.Locked(1))
	must(j.Owner(1, 100, 55))
	must2(j.Write(100, 0, []byte("old")))
	mark := j.Mark()
	must2(j.Write(101, 8, []byte("kept")))
	must(j.Barrier(100, mark)) // 100's write is committed
	must2(j.Write(100, 3, []byte("new")))
	must(j.Release(2))
	must(j.Close())

	st, err := Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Session != 7 || st.NextFh != 3 {
		t.Fatalf("session %d nextFh %d", st.Session, st.NextFh)
	}
	if h := st.Handles[1]; h.Ino != 100 || h.Flags != 2 || !h.Tracked || !h.Locked {
		t.Fatalf("handle 1: %+v", h)
	}
	if _, ok := st.Handles[2]; ok || len(st.Handles) != 1 {
		t.Fatalf("handles: %+v", st.Handles)
	}
	if st.Dirs[3] != 1 || len(st.Owners) != 1 || st.Owners[0] != (Owner{Ino: 100, Owner: 55, Fh: 1}) {
		t.Fatalf("dirs %v owners %v", st.Dirs, st.Owners)
	}
	if len(st.Writes) != 2 || string(st.Writes[0].Data) != "kept" || st.Writes[1].Off != 3 || string(st.Writes[1].Data) != "new" {
		t.Fatalf("writes: %+v", st.Writes)
	}
}

func TestTornTailIsIgnored(t *testing.T) {
	dir := t.TempDir()
	j, err := Create(dir, State{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Write(5, 0, []byte("acknowledged")); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Write(5, 12, bytes.Repeat([]byte("x"), 100)); err != nil {
		t.Fatal(err)
	}
	j.Close()
	seg := filepath.Join(dir, "seg-0000000000000001")
	b, _ := os.ReadFile(seg)
	if err := os.WriteFile(seg, b[:len(b)-10], 0o600); err != nil { // died inside the second append
		t.Fatal(err)
	}
	st, err := Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Writes) != 1 || string(st.Writes[0].Data) != "acknowledged" {
		t.Fatalf("writes: %+v", st.Writes)
	}
}

func TestRotationCheckpointsAndDropsOldSegments(t *testing.T) {
	dir := t.TempDir()
	synced := make(chan struct{}, 10)
	j, err := Create(dir, State{}, Options{SegmentSize: 4096, Sync: func() error { synced <- struct{}{}; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Open(9, Handle{Ino: 200, Flags: 1}); err != nil {
		t.Fatal(err)
	}
	m := j.Mark()
	for i := 0; i < 10; i++ {
		if _, err := j.Write(200, uint64(i*1000), make([]byte, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	<-synced
	if err := j.Barrier(200, m+10); err != nil { // what the Sync would have written
		t.Fatal(err)
	}
	j.Close()
	segs, _ := segments(dir)
	if len(segs) == 0 || segs[0] == 1 {
		t.Fatalf("segments after rotation: %v", segs)
	}
	st, err := Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Handles[9].Ino != 200 {
		t.Fatalf("the checkpoint lost handle 9: %+v", st.Handles)
	}
	if len(st.Writes) != 0 {
		t.Fatalf("%d writes survive the barrier", len(st.Writes))
	}
	j2, err := Create(dir, st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	j2.Close()
	st2, _ := Recover(dir)
	if st2.Handles[9].Ino != 200 || st2.NextSeq < st.NextSeq {
		t.Fatalf("successor journal: %+v", st2)
	}
}

// TestAcquireExcludes: a journal directory's lock is held by one owner at
// a time; another waits for it, and fails past its wait naming the holder.
func TestAcquireExcludes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "j")
	first, err := Acquire(dir, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	var holder int
	if _, err := Acquire(dir, 100*time.Millisecond, func(pid int) { holder = pid }); err == nil {
		t.Fatal("a second owner took a held journal lock")
	}
	if holder != os.Getpid() {
		t.Errorf("the waiter was told the holder is pid %d, want %d", holder, os.Getpid())
	}
	go func() { time.Sleep(100 * time.Millisecond); first.Close() }()
	second, err := Acquire(dir, 5*time.Second, nil)
	if err != nil {
		t.Fatalf("the lock was not taken once released: %v", err)
	}
	second.Close()
}

// TestAcquireAfterUnlock: a waiter whose lock file its holder removed as
// it let go (Unlock) takes the file at the path, the one every later
// owner locks too.
func TestAcquireAfterUnlock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "j")
	first, err := Acquire(dir, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(100 * time.Millisecond); Unlock(first) }()
	second, err := Acquire(dir, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if _, err := Acquire(dir, 100*time.Millisecond, nil); err == nil {
		t.Fatal("a third owner took the lock the second holds (each locked another file)")
	}
}

// newTestJournal creates a journal in a new directory, and a must that
// fails t on an error.
func newTestJournal(t *testing.T) (string, *Journal, func(error)) {
	t.Helper()
	dir := t.TempDir()
	j, err := Create(dir, State{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return dir, j, func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}
