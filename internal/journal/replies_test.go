package journal

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestRepliesRecovered(t *testing.T) {
	dir, j, must := newTestJournal(t)
	must(j.Open(4, Handle{Ino: 100, Request: 10, DirectIO: true}))
	must(j.Reply(12, []byte("entry")))
	must(j.Reply(14, nil))
	_, err := j.Append(100, 0, 16, []byte("appended"))
	must(err)
	must(j.Close())
	st, err := Recover(dir)
	must(err)
	if h := st.Handles[4]; h.Request != 10 || !h.DirectIO || h.KeepCache {
		t.Fatalf("handle 4: %+v", h)
	}
	if r, ok := st.Replies[12]; !ok || string(r.Data) != "entry" {
		t.Fatalf("reply 12: %+v %v", r, ok)
	}
	if _, ok := st.Replies[14]; !ok {
		t.Fatal("reply 14 lost")
	}
	if r := st.Replies[16]; r.Written != 8 || len(st.Writes) != 1 {
		t.Fatalf("append 16: %+v, writes %+v", r, st.Writes)
	}
	// A successor's journal carries them (it may die before answering
	// the resends).
	j2, err := Create(dir, st, Options{})
	must(err)
	must(j2.Close())
	st2, err := Recover(dir)
	must(err)
	if len(st2.Replies) != 3 || st2.Replies[16].Written != 8 || st2.Handles[4].Request != 10 || len(st2.Writes) != 0 {
		t.Fatalf("successor journal: replies %+v handles %+v writes %d", st2.Replies, st2.Handles, len(st2.Writes))
	}
}

// TestIntentsRecovered: an intent is returned while no outcome of its
// request follows it, replaced by the outcome once one does, and carried
// by a successor's journal as an intent.
func TestIntentsRecovered(t *testing.T) {
	dir, j, must := newTestJournal(t)
	must(j.Intent(20, 777))
	must(j.Intent(22, 0))
	must(j.Reply(22, nil))
	must(j.Intent(24, 778))
	must(j.Open(5, Handle{Ino: 778, Request: 24})) // a create's outcome
	// However many requests are answered while request 20 runs, its
	// intent stays.
	for req := uint64(1000); req < 1000+2*ReplyKeep; req++ {
		must(j.Reply(req, nil))
	}
	must(j.Close())
	st, err := Recover(dir)
	must(err)
	if r := st.Replies[20]; !r.Intent || r.Ino != 777 {
		t.Fatalf("intent 20: %+v", r)
	}
	if r, ok := st.Replies[22]; ok && r.Intent {
		t.Fatalf("request 22, answered after its intent: %+v", r)
	}
	if r, ok := st.Replies[24]; ok {
		t.Fatalf("request 24, a create whose handle is recorded: %+v", r)
	}
	j2, err := Create(dir, st, Options{})
	must(err)
	must(j2.Close())
	st2, err := Recover(dir)
	must(err)
	if r := st2.Replies[20]; !r.Intent || r.Ino != 777 || st2.Replies[22].Intent || st2.Replies[24].Intent {
		t.Fatalf("successor journal: %+v", st2.Replies)
	}
}

func TestRepliesBoundedAcrossRotation(t *testing.T) {
	dir := t.TempDir()
	j, err := Create(dir, State{}, Options{SegmentSize: 64 << 10, Sync: func() error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	n := uint64(3 * ReplyKeep)
	for req := uint64(1); req <= n; req++ {
		if err := j.Reply(req, make([]byte, 16)); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	st, err := Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Replies) != ReplyKeep {
		t.Fatalf("%d replies recovered, want the latest %d", len(st.Replies), ReplyKeep)
	}
	if _, ok := st.Replies[n]; !ok {
		t.Fatal("the latest reply is lost")
	}
	if _, ok := st.Replies[n-ReplyKeep]; ok {
		t.Fatal("a reply older than the latest ReplyKeep is kept")
	}
}

func TestNewerFormatRefused(t *testing.T) {
	dir := t.TempDir()
	j, err := Create(dir, State{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	seg := filepath.Join(dir, segName(1))
	b, _ := os.ReadFile(seg)
	body := append([]byte(nil), b[headerSize:headerSize+32]...)
	binary.LittleEndian.PutUint64(body[24:], Format+1)
	if err := os.WriteFile(seg, appendRecord(nil, kindCheckpoint, body), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Recover(dir); !errors.Is(err, ErrNewerFormat) {
		t.Fatalf("Recover of a newer journal: %v", err)
	}
}

// TestGuardStopsFormat1Readers: a binary of format 1 reads every
// seg-NNNN as a segment file; the guard directory makes that read fail.
func TestGuardStopsFormat1Readers(t *testing.T) {
	dir := t.TempDir()
	j, err := Create(dir, State{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	if _, err := os.ReadFile(filepath.Join(dir, "seg-0000000000000000")); err == nil {
		t.Fatal("a format 1 reader could read the guard as a segment")
	}
	if segs, _ := segments(dir); len(segs) != 1 || segs[0] != 1 {
		t.Fatalf("segments: %v", segs)
	}
}

// TestFormat1Read: a journal format 1 wrote (no version, 25-byte opens)
// is read as before.
func TestFormat1Read(t *testing.T) {
	dir := t.TempDir()
	var b []byte
	b = appendRecord(b, kindCheckpoint, u64s(3, 0, 1))
	b = appendRecord(b, kindOpen, append(u64s(5, 100, 2), 1))
	w := u64s(1, 100, 0)
	b = appendRecord(b, kindWrite, append(w, "v1"...))
	if err := os.WriteFile(filepath.Join(dir, segName(1)), b, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h := st.Handles[5]; st.Session != 3 || h.Ino != 100 || !h.Tracked || h.Request != 0 || len(st.Writes) != 1 || string(st.Writes[0].Data) != "v1" {
		t.Fatalf("format 1 journal read as %+v", st)
	}
}

// BenchmarkReply is the cost a reply record adds to an unlink or a mkdir
// (docs/admin.md quotes it): one append of an entry-sized reply.
func BenchmarkReply(b *testing.B) {
	j, err := Create(b.TempDir(), State{}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	entry := make([]byte, 128)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := j.Reply(uint64(i), entry); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIntent is the cost an intent record adds to a create, an
// unlink or a mkdir (docs/admin.md quotes it).
func BenchmarkIntent(b *testing.B) {
	j, err := Create(b.TempDir(), State{}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := j.Intent(uint64(i), uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestIntentSetBound: past IntentKeep unsettled intents the oldest goes,
// a settled one leaves no trace, and one settled then recorded again is
// listed once.
func TestIntentSetBound(t *testing.T) {
	var s intentSet
	for req := uint64(1); req <= IntentKeep+10; req++ {
		s.add(req, req*10)
	}
	if len(s.ino) != IntentKeep {
		t.Fatalf("%d intents kept, want %d", len(s.ino), IntentKeep)
	}
	if _, ok := s.ino[10]; ok {
		t.Fatal("intent 10 kept past the bound")
	}
	if ino := s.ino[IntentKeep+10]; ino != (IntentKeep+10)*10 {
		t.Fatalf("the latest intent names %d", ino)
	}
	s.settle(20)
	s.add(20, 21)
	s.settle(30)
	n, seen20 := 0, 0
	s.each(func(req, ino uint64) {
		n++
		if req == 30 {
			t.Fatal("settled intent 30 listed")
		}
		if req == 20 {
			seen20++
			if ino != 21 {
				t.Fatalf("intent 20 names %d, want 21", ino)
			}
		}
	})
	if n != len(s.ino) || seen20 != 1 {
		t.Fatalf("each listed %d (intent 20: %d times), want %d and once", n, seen20, len(s.ino))
	}
}
