package restart

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"shoal/internal/rundir"
	"shoal/internal/testutil"
)

// segments lists the journal segment files of the mount at mp.
func segments(t *testing.T, mp string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(rundir.Path(mp, ".journal"), "seg-*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range m {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			out = append(out, filepath.Base(p))
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
