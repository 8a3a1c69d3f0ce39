package sqlkv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"shoal/internal/meta/kv"
)

// TestSQLiteWALWrittenAhead checks walahead.go: the checkpointer keeps
// written zeros past the WAL's last frame, so that commits land inside
// the file's size (overwrites) rather than grow it; and that SQLite
// recovers every commit from a WAL that ends in those zeros: a copy of
// the database and its WAL, taken after a Sync while the store is open
// (a crash, as power loss leaves the files), opens with every key.
func TestSQLiteWALWrittenAhead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "meta.db")
	st := openSQLiteAt(t, path)
	c := st.(*Store).pool.(*litePool).ckpt
	commits := 0
	fill := func(n int) {
		t.Helper()
		for range n {
			err := st.Txn(ctx, func(tx kv.Tx) error {
				tx.Set(fmt.Appendf(nil, "key%06d", commits), []byte(fmt.Sprint(commits)))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			commits++
		}
	}
	walSize := func() int64 {
		t.Helper()
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	room := func() int64 {
		t.Helper()
		end, ok, err := c.walEnd()
		if err != nil || !ok {
			t.Fatalf("WAL index header: ok %v, %v", ok, err)
		}
		return walSize() - end
	}
	// At open, before Open's own commits (its schema), which went into
	// the zeros.
	if size := walSize(); size < walAhead {
		t.Fatalf("after open: a WAL of %d bytes, want at least %d written at open", size, walAhead)
	}
	for round := range 3 {
		if err := c.extendWAL(); err != nil {
			t.Fatal(err)
		}
		if r := room(); r < walAhead {
			t.Fatalf("round %d: %d bytes written past the WAL's last frame, want at least %d", round, r, walAhead)
		}
		before := walSize()
		fill(100) // about 800 KiB of frames: well inside walAhead
		if end, _, _ := c.walEnd(); end > before {
			t.Fatalf("round %d: the WAL's frames end at %d, past the %d bytes the file had before the commits: they grew it", round, end, before)
		}
	}
	if err := st.(kv.Syncer).Sync(ctx); err != nil {
		t.Fatal(err)
	}
	crashed := filepath.Join(t.TempDir(), "meta.db")
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(crashed+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cp := openSQLiteAt(t, crashed)
	for i := range commits {
		if v := mustGet(t, cp, fmt.Appendf(nil, "key%06d", i)); string(v) != fmt.Sprint(i) {
			t.Fatalf("after recovery from a WAL ending in zeros, key %d is %q, want %q (%d commits)", i, v, fmt.Sprint(i), commits)
		}
	}
}
