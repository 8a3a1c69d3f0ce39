package data

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"shoal/internal/meta"
)

// TestCommitOnUploadGoroutine checks that the upload which stores the
// block a flushed slice waits for commits it on its own goroutine
// (claimCommit) rather than hand it to a new one: the commit's stack
// starts in the upload, for a packed slice (an fsync of a small write)
// and for a block of its own.
func TestCommitOnUploadGoroutine(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int    // bytes written before the flush
		fn   string // the upload function that must be on the commit's stack
	}{
		{"pack", 1000, "(*Writer).uploadPack("},
		{"block", 3 * 4096, "(*Writer).upload("},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStore(t, newMem(), Config{BlockSize: 4096, Uploads: 4})
			e := newEngine(nil)
			var stacks []string
			commit := e.committer(1)
			w := s.NewWriter(1, e.newID, func(ctx context.Context, ws []meta.SliceWrite) error {
				buf := make([]byte, 64<<10)
				stacks = append(stacks, string(buf[:runtime.Stack(buf, false)]))
				return commit(ctx, ws)
			})
			for i := range 3 {
				writeAll(t, w, uint64(i*tc.n), pattern(byte(i), 0, tc.n))
				flush(t, w)
			}
			if len(stacks) == 0 {
				t.Fatal("no commits")
			}
			for i, st := range stacks {
				if !strings.Contains(st, tc.fn) {
					t.Fatalf("commit %d did not run on the upload's goroutine (%s):\n%s", i, tc.fn, st)
				}
			}
		})
	}
}
