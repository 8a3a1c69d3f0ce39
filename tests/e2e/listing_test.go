package e2e

import (
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The kernel asks for attributes with every page of a listing
// (readdirplus), and the mount answers several of its requests from one
// engine read of a page of entries. These tests hold that sharing to what
// a fresh read would give.

// listingDir makes dir with n empty files f0000...
func listingDir(t *testing.T, dir string, n int) {
	t.Helper()
	ok(t, os.Mkdir(dir, 0o755), "mkdir")
	for i := 0; i < n; i++ {
		writeFile(t, fmt.Sprintf("%s/f%04d", dir, i), nil, 0o644)
	}
}

// startListing opens dir and reads its first small batch of entries: the
// mount reads a page of entries with attributes, more than the batch.
func startListing(t *testing.T, dir string) int {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	ok(t, err, "open dir")
	t.Cleanup(func() { unix.Close(fd) })
	buf := make([]byte, 2048)
	if n, err := unix.Getdents(fd, buf); err != nil || n == 0 {
		t.Fatalf("getdents: %d %v", n, err)
	}
	return fd
}

// finishListing reads the rest of the listing.
func finishListing(t *testing.T, fd int) {
	t.Helper()
	buf := make([]byte, 2048)
	for {
		n, err := unix.Getdents(fd, buf)
		ok(t, err, "getdents")
		if n == 0 {
			return
		}
	}
}

// TestListingAfterAppend: a file appended to on this mount while a listing
// is under way keeps its new size; the rest of the listing must not bring
// back the size read with the listing's first page (the kernel takes what
// a readdirplus reply says as news, and O_APPEND writes at it).
func TestListingAfterAppend(t *testing.T) {
	// The files are made on the other mount: this one's kernel knows none
	// of the names, so the open below looks its name up, after which the
	// kernel asks for the listing's attributes again (READDIRPLUS_AUTO).
	m, other := twoMounts(t)
	listingDir(t, other.Path("d"), 600)
	fd := startListing(t, m.Path("d"))
	target := m.Path("d", "f0500")
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_APPEND, 0)
	ok(t, err, "open")
	_, err = f.Write([]byte("hello"))
	ok(t, err, "append")
	ok(t, f.Close(), "close")
	finishListing(t, fd)
	if st := stat(t, target); st.Size != 5 {
		t.Fatalf("size after the listing went on: %d, want 5", st.Size)
	}
}

// TestListingAgeBound: on every engine, another mount's change shows here within the
// attribute timeout (1 s) of its close, even through a lookup answered
// from attributes read before it (by the read-ahead of an earlier lookup
// after a listing): what the kernel caches from such an answer it keeps
// only for what is left of the timeout since the read, not for a fresh
// timeout.
func TestListingAgeBound(t *testing.T) {
	forEngines(t, testListingAgeBound)
}

func testListingAgeBound(t *testing.T, metaURL string) {
	a, b := twoMountsOn(t, metaURL)
	dir := a.Path("d")
	listingDir(t, dir, 600)
	time.Sleep(1100 * time.Millisecond) // the names the creates cached expire
	fd := startListing(t, dir)
	finishListing(t, fd)
	stat(t, a.Path("d", "f0400")) // reads the attributes of the names after it
	writeFile(t, b.Path("d", "f0500"), []byte("hello"), 0o644)
	closed := time.Now()
	time.Sleep(300 * time.Millisecond)
	stat(t, a.Path("d", "f0500")) // may show the size read ahead, 0
	time.Sleep(time.Until(closed.Add(1100 * time.Millisecond)))
	if st := stat(t, a.Path("d", "f0500")); st.Size != 5 {
		t.Fatalf("size 1.1 s after the other mount's close: %d, want 5", st.Size)
	}
}

// TestListingAfterRename: a name renamed away on this mount after a
// listing read it is gone at once, though the listing still holds it.
func TestListingAfterRename(t *testing.T) {
	m := mountFresh(t)
	dir := m.Path("d")
	listingDir(t, dir, 600)
	time.Sleep(1100 * time.Millisecond) // the names the creates cached expire
	fd := startListing(t, dir)
	finishListing(t, fd)
	stat(t, m.Path("d", "f0100")) // reads the attributes of the names after it
	ok(t, os.Rename(m.Path("d", "f0500"), m.Path("d", "g")), "rename")
	if _, err := os.Stat(m.Path("d", "f0500")); !os.IsNotExist(err) {
		t.Fatalf("stat of the renamed name: %v, want ENOENT", err)
	}
	if st := stat(t, m.Path("d", "g")); st.Size != 0 {
		t.Fatalf("stat of the new name: size %d", st.Size)
	}
}
