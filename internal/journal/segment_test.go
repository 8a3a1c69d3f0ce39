package journal

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestUnclosedSegmentRecovers: a journal whose process died (no Close)
// ends in allocated zeros, which end its records.
func TestUnclosedSegmentRecovers(t *testing.T) {
	dir := t.TempDir()
	j, err := Create(dir, State{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Write(5, 0, []byte("acknowledged")); err != nil {
		t.Fatal(err)
	}
	st, err := Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Writes) != 1 || string(st.Writes[0].Data) != "acknowledged" {
		t.Fatalf("writes: %+v", st.Writes)
	}
	j.Close()
}

// TestReusedSegmentHidesOldRecords: a segment file is reused once its
// writes are committed, and the records it held before are never read as
// records of the segment it became, even where a new record ends exactly
// where an old one did, and before its first record is written.
func TestReusedSegmentHidesOldRecords(t *testing.T) {
	dir := t.TempDir()
	synced := make(chan struct{}, 3) // a token lets a rotation's Sync return
	j, err := Create(dir, State{}, Options{SegmentSize: 4096, Sync: func() error { <-synced; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { synced <- struct{}{}; j.Close() }()
	ino := func(p string) uint64 {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	first := ino(j.segPath(1))
	write := func(n int, i uint64) {
		t.Helper()
		for k := 0; k < n; k++ {
			if _, err := j.Write(i, uint64(k*1000), bytes.Repeat([]byte{byte(i)}, 1000)); err != nil {
				t.Fatal(err)
			}
		}
	}
	synced <- struct{}{}
	write(4, 1) // segment 1: checkpoint, four writes of inode 1; rotates
	j.wg.Wait() // its Sync ran: segment 1 is the spare
	if _, err := os.Stat(filepath.Join(dir, spareName)); err != nil {
		t.Fatalf("no spare after a rotation: %v", err)
	}
	// A spare taking a segment's name holds no record yet.
	b, _ := os.ReadFile(filepath.Join(dir, spareName))
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, segName(1)), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if st, err := Recover(other); err != nil || len(st.Writes) != 0 {
		t.Fatalf("a reset spare read as records: %d writes, %v", len(st.Writes), err)
	}

	synced <- struct{}{}
	write(4, 2) // segment 2; rotates into segment 3, the file of segment 1
	j.wg.Wait()
	if got := ino(j.segPath(3)); got != first {
		t.Fatalf("segment 3 is a new file, not segment 1's")
	}
	write(1, 3) // ends where segment 1's first write of inode 1 did
	st, err := Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Writes) != 1 || st.Writes[0].Ino != 3 {
		for _, w := range st.Writes {
			t.Errorf("write of inode %d at %d", w.Ino, w.Off)
		}
		t.Fatalf("want the one write of inode 3, got %d writes", len(st.Writes))
	}
	// A record too long for the mapping is written with pwritev, also
	// with zeros after it; it rotates into segment 4, the file of segment
	// 2, while segment 3 stays (its Sync waits).
	big := bytes.Repeat([]byte{4}, 3<<20)
	if _, err := j.Write(4, 0, big); err != nil {
		t.Fatal(err)
	}
	write(1, 5)
	if st, err = Recover(dir); err != nil {
		t.Fatal(err)
	}
	if len(st.Writes) != 3 || !bytes.Equal(st.Writes[1].Data, big) || st.Writes[2].Ino != 5 {
		t.Fatalf("after a long record: %d writes", len(st.Writes))
	}
}
