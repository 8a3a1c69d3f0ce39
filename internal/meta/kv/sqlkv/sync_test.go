package sqlkv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"shoal/internal/meta/kv"
)

// TestSQLiteCheckpointInBackground checks that committed frames reach the
// database file without a Sync and below the writer's own auto-checkpoint
// threshold: the checkpointer goroutine moved them.
func TestSQLiteCheckpointInBackground(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	st := openSQLiteAt(t, path)
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	commits := 2 * ckptEvery // a few hundred pages, far below writerAutoCheckpoint
	fillSQLite(t, st, commits)
	deadline := time.Now().Add(10 * time.Second)
	for {
		after, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if after.Size() > before.Size() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("database file still %d bytes after %d commits: nothing checkpointed in the background", after.Size(), commits)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSQLiteSyncBesideWriter checks that Sync neither needs the writer
// connection (a long write transaction does not hold it up) nor fails on a
// store that has not written yet.
func TestSQLiteSyncBesideWriter(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	syncer := st.(kv.Syncer)
	if err := syncer.Sync(ctx); err != nil {
		t.Fatalf("Sync of a fresh store: %v", err)
	}
	if err := st.Txn(ctx, func(tx kv.Tx) error { tx.Set([]byte("a"), []byte("1")); return nil }); err != nil {
		t.Fatal(err)
	}
	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- st.Txn(ctx, func(tx kv.Tx) error {
			tx.Set([]byte("b"), []byte("2"))
			close(inside)
			<-release
			return nil
		})
	}()
	<-inside
	synced := make(chan error, 1)
	go func() { synced <- syncer.Sync(ctx) }()
	select {
	case err := <-synced:
		if err != nil {
			t.Fatalf("Sync: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Sync waited for a write transaction to end")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// walDescriptors counts this process's descriptors open on path.
func walDescriptors(t *testing.T, path string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && target == path {
			n++
		}
	}
	return n
}

// TestSQLiteSyncKeepsWALOpen checks that Sync opens the WAL once and
// keeps it (no open and close per fsync(2) on a mount), leaks no
// descriptor however often it runs, and lets it go at Close.
func TestSQLiteSyncKeepsWALOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "meta.db")
	st, err := Open(ctx, "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	syncer := st.(kv.Syncer)
	commit := func(i int) {
		t.Helper()
		if err := st.Txn(ctx, func(tx kv.Tx) error { tx.Set(fmt.Appendf(nil, "k%d", i), []byte("v")); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	commit(0)
	// The checkpointer maps the WAL once, in the background, through a
	// descriptor it keeps (resident.go): counted from then on.
	<-st.(*Store).pool.(*litePool).ckpt.mapped
	wal := path + "-wal"
	before := walDescriptors(t, wal) // SQLite's own and the mapping's
	if err := syncer.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	kept := walDescriptors(t, wal)
	if kept != before+1 {
		t.Errorf("after Sync: %d descriptors on the WAL, want SQLite's %d and the one Sync keeps", kept, before)
	}
	for i := 1; i <= 50; i++ {
		commit(i)
		if err := syncer.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := walDescriptors(t, wal); n != kept {
		t.Errorf("after 50 more Syncs: %d descriptors on the WAL, want %d", n, kept)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if n := walDescriptors(t, wal); n != 0 {
		t.Errorf("after Close: %d descriptors on the WAL, want none", n)
	}
}

// openSQLiteAt opens a SQLite store at path, closed when the test ends.
func openSQLiteAt(t *testing.T, path string) kv.Store {
	t.Helper()
	st, err := Open(context.Background(), "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// fillSQLite commits n transactions of one 1000-byte key each.
func fillSQLite(t *testing.T, st kv.Store, n int) {
	t.Helper()
	for i := range n {
		err := st.Txn(context.Background(), func(tx kv.Tx) error {
			tx.Set(fmt.Appendf(nil, "key%06d", i), make([]byte, 1000))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
