package sqlkv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"shoal/internal/meta/kv"
)

// otherEnv names the database and the key a re-executed test binary
// commits (TestSQLiteOtherProcessChild).
const (
	otherDBEnv  = "SHOAL_SQLKV_OTHER_DB"
	otherKeyEnv = "SHOAL_SQLKV_OTHER_KEY"
)

// TestSQLiteOtherProcessSeesOneDatabase: while a store is open (a mount),
// other processes open the same database, commit and close (the CLI:
// backup, snapshot, status). Each must leave the WAL and its index in
// place for the open store, and each side must see the other's commits.
// A closing process that finds itself the last user of the database
// checkpoints and deletes the WAL and the -shm; it knows it is not when
// the open store's process still holds its locks on the -shm, which it
// loses if it closes any descriptor of that file (walahead.go once read
// the WAL index through a descriptor of its own and closed it: the other
// process then deleted both files, and the open store went on alone with
// the deleted ones, seeing nothing the others committed).
func TestSQLiteOtherProcessSeesOneDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "meta.db")
	st := openSQLiteAt(t, path)
	c := st.(*Store).pool.(*litePool).ckpt
	for i, key := range []string{"first", "second", "third"} {
		// The checkpointer reads the WAL index between the others' runs,
		// as it does after each background checkpoint.
		if err := c.extendWAL(); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestSQLiteOtherProcessChild$")
		cmd.Env = append(os.Environ(), otherDBEnv+"="+path, otherKeyEnv+"="+key)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, out)
		}
		for _, suffix := range []string{"-wal", "-shm"} {
			if _, err := os.Stat(path + suffix); err != nil {
				t.Fatalf("after another process closed the database (%d): %v", i, err)
			}
		}
		if v := mustGet(t, st, []byte(key)); string(v) != "from the child" {
			t.Fatalf("the open store reads %q for the key another process committed (%d), want %q", v, i, "from the child")
		}
		if err := st.Txn(ctx, func(tx kv.Tx) error { tx.Set([]byte("parent-"+key), []byte("from the parent")); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	other, err := Open(ctx, "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if v := mustGet(t, other, []byte("parent-third")); string(v) != "from the parent" {
		t.Fatalf("a new opener reads %q for the open store's commit, want %q", v, "from the parent")
	}
}

// TestSQLiteOtherProcessChild commits one key and closes; it does nothing
// unless otherDBEnv is set.
func TestSQLiteOtherProcessChild(t *testing.T) {
	path := os.Getenv(otherDBEnv)
	if path == "" {
		t.Skip("helper process for TestSQLiteOtherProcessSeesOneDatabase")
	}
	s, err := Open(context.Background(), "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	key := os.Getenv(otherKeyEnv)
	if err := s.Txn(context.Background(), func(tx kv.Tx) error { tx.Set([]byte(key), []byte("from the child")); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSQLiteKeepsItsLocks: once a store has opened, committed, and
// mapped its files (resident.go) and read the WAL index (walahead.go),
// this process still holds SQLite's POSIX locks: the SHARED lock on the
// database file and the dead man switch on the -shm. Closing any
// descriptor of a file drops every lock the process holds on it, so a
// descriptor opened beside SQLite's and closed (resident.go once closed
// the one it mapped the database through) would lose them.
func TestSQLiteKeepsItsLocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	st := openSQLiteAt(t, path)
	fillSQLite(t, st, 2*ckptEvery) // background checkpoints, refreshes, writes ahead
	c := st.(*Store).pool.(*litePool).ckpt
	if err := c.extendWAL(); err != nil {
		t.Fatal(err)
	}
	mustGet(t, st, []byte("key000001"))
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Skipf("no /proc/locks: %v", err)
	}
	for _, f := range []string{path, path + "-shm"} {
		var sb unix.Stat_t
		if err := unix.Stat(f, &sb); err != nil {
			t.Fatal(err)
		}
		// /proc/locks: "1: POSIX ADVISORY READ <pid> <maj>:<min>:<ino> <start> <end>".
		held := false
		for _, line := range strings.Split(string(locks), "\n") {
			fields := strings.Fields(line)
			if len(fields) >= 6 && fields[1] == "POSIX" && fields[4] == strconv.Itoa(os.Getpid()) &&
				strings.HasSuffix(fields[5], ":"+strconv.FormatUint(sb.Ino, 10)) {
				held = true
			}
		}
		if !held {
			t.Errorf("this process holds no POSIX lock on %s; /proc/locks:\n%s", filepath.Base(f), locks)
		}
	}
}

// TestSQLiteMapsThroughOneDescriptor: refreshing the mappings of the
// database and the WAL (resident.go) many times, remapping after a
// failure included, keeps one descriptor per file and inode, since none
// may be closed before the last connection.
func TestSQLiteMapsThroughOneDescriptor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	st := openSQLiteAt(t, path)
	fillSQLite(t, st, 10)
	r := newResident(path, path+"-wal")
	defer r.closeFiles()
	for range 20 {
		r.refresh()
		for _, f := range r.files {
			f.unmap() // as after a failed mremap: the next refresh maps afresh
		}
	}
	for _, f := range r.files {
		if n := len(f.retired); f.fd < 0 || n != 0 {
			t.Errorf("%s: descriptor %d and %d retired after 20 refreshes of one inode, want one and none", filepath.Base(f.path), f.fd, n)
		}
	}
	r.close()
}
