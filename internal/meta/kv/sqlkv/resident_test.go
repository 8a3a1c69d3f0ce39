package sqlkv

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
)

// TestSQLiteFilesStayResident checks that the database file and its WAL
// stay in memory when the kernel drops the clean page cache pages of the
// files (here with POSIX_FADV_DONTNEED on each, a drop_caches confined to
// them): the checkpointer keeps them mapped, and a mapped page is not
// dropped. Without that, a listing or an open after drop_caches (or
// memory pressure) reads the database from disk page by page, and a
// commit waits for reads of the WAL blocks its frames partly overwrite.
func TestSQLiteFilesStayResident(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	fillSQLite(t, openSQLiteAt(t, path), 2*ckptEvery)
	deadline := time.Now().Add(10 * time.Second)
	for {
		db, wal := dropAndMeasure(t, path), dropAndMeasure(t, path+"-wal")
		if db >= 0.9 && wal >= 0.9 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after dropping the files' cached pages, %.0f%% of the database and %.0f%% of the WAL are in memory, want at least 90%% of each", 100*db, 100*wal)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dropAndMeasure writes back and drops the clean cached pages of the file
// at path that no process maps, and returns the fraction of its pages
// still in memory.
func dropAndMeasure(t *testing.T, path string) float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	if err := unix.Fdatasync(fd); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	return testutil.Resident(t, path)
}
