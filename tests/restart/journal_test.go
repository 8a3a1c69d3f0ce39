package restart

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"shoal/internal/rundir"
	"shoal/internal/testutil"
)

// segments lists the journal segment files of the mount at mp.
func segments(t *testing.T, mp string) []string {
	t.Helper()
	ents, err := os.ReadDir(rundir.Path(mp, ".journal")) // (no Glob: the name holds backslashes)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "seg-") && e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestRotationAmidClosesKeepsJournalBounded: with a journal segment of
// 64 KiB (the test hook SHOAL_TEST_JOURNAL_SEGMENT), processes write and
// close many small files at once, so that the flush a rotation runs
// (vfs.FS.Sync) meets files being closed. It must not fail for them (the
// old segments would stay: the journal only grows), and no acknowledged
// write may be lost: after a kill -9 of the server every file reads back
// whole through another mount.
func TestRotationAmidClosesKeepsJournalBounded(t *testing.T) {
	t.Setenv("SHOAL_TEST_JOURNAL_SEGMENT", "65536")
	v := testutil.NewVolume(t)
	m := v.Mount(t)
	const workers, files = 8, 150
	content := func(w, i int) []byte {
		return bytes.Repeat([]byte(fmt.Sprintf("w%d-f%d;", w, i)), 300+i)
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < files; i++ {
				if err := os.WriteFile(m.Path(fmt.Sprintf("w%d-f%d", w, i)), content(w, i), 0o644); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // for the last rotation's flush
	if log := m.LogText(); strings.Contains(log, "flushing before dropping old segments failed") {
		t.Errorf("a journal rotation failed while files were closed:\n%s", grepLines(log, "dropping old segments"))
	}
	if segs := segments(t, m.Dir); len(segs) > 3 {
		t.Errorf("the journal kept %d segments of 64 KiB (two at most expected): %v", len(segs), segs)
	}
	disrupt(t, m, "kill9")
	other := otherMount(t, m)
	for w := 0; w < workers; w++ {
		for i := 0; i < files; i++ {
			got, err := os.ReadFile(other.Path(fmt.Sprintf("w%d-f%d", w, i)))
			if err != nil {
				t.Fatal(err)
			}
			if want := content(w, i); !bytes.Equal(got, want) {
				t.Fatalf("w%d-f%d holds %d bytes, want %d", w, i, len(got), len(want))
			}
		}
	}
}

// grepLines returns the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	if len(out) > 10 {
		out = append(out[:10], fmt.Sprintf("... and %d more", len(out)-10))
	}
	return strings.Join(out, "\n")
}

// TestRemountAtOnceKeepsTheNewJournal: a mount is unmounted with
// umount(8), which returns once the kernel lets go, not when the server is
// done, and the volume is mounted again at once at the same place, while
// the old server is still closing (the test hook SHOAL_TEST_CLOSE_DELAY
// makes it take 2 s). What the old mount leaves behind when it ends must
// not be the new mount's: its journal (acknowledged writes not yet
// committed) and its supervisor's control socket. The new mount then dies
// whole (supervisor and server): the next mount must apply its
// acknowledged write from the journal.
func TestRemountAtOnceKeepsTheNewJournal(t *testing.T) {
	v := testutil.NewVolume(t)
	t.Setenv("SHOAL_TEST_CLOSE_DELAY", "2s")
	m := v.Mount(t)
	if err := os.WriteFile(m.Path("before"), []byte("closed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Unmount(m.Dir, 0); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SHOAL_TEST_CLOSE_DELAY", "")
	again := v.MountAt(t, m.Dir)
	f, err := os.Create(again.Path("acked"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := bytes.Repeat([]byte("acknowledged "), 10<<10)
	if _, err := f.Write(want); err != nil {
		t.Fatal(err)
	}
	if exited, err := m.Wait(30 * time.Second); !exited || err != nil {
		t.Fatalf("the first mount did not end well after umount (exited %v, %v)\n%s", exited, err, m.LogText())
	}
	if segs := segments(t, again.Dir); len(segs) == 0 {
		t.Errorf("the new mount's journal has no segment left once the old mount ended\n%s", m.LogText())
	}
	if _, err := os.Stat(rundir.Path(again.Dir, ".sock")); err != nil {
		t.Errorf("the new mount's control socket is gone once the old mount ended: %v", err)
	}
	server := again.WaitServerPID(t)
	_ = syscall.Kill(again.PID(), syscall.SIGKILL) // first: it must not start a successor
	_ = syscall.Kill(server, syscall.SIGKILL)
	again.Kill9(t)
	_ = f.Close()
	third := v.MountAt(t, m.Dir)
	got, err := os.ReadFile(third.Path("acked"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("after the new mount died the file holds %d bytes, want the %d acknowledged\n%s", len(got), len(want), third.LogText())
	}
}
