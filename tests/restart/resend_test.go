package restart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/fusefs"
	"shoal/internal/meta"
	"shoal/internal/testutil"
	"shoal/internal/volume"
)

// Requests that already happened when the server died: the test hook
// fusefs.KillBeforeReplyEnv kills the server after an operation's reply
// is journaled and before the kernel gets it, and the kernel resends the
// request to the successor. The application must see the operation's
// own outcome, once: no EEXIST for its own create, no ENOENT for its own
// unlink, no bytes appended twice, no handle left open.

// crashBeforeReply mounts a fresh volume whose server kills itself the
// first time an op request succeeds, between its journaled reply and the
// kernel getting it. The returned func fails t unless that happened, a
// successor serves, and it answered the resent request from the journal.
func crashBeforeReply(t *testing.T, op string) (*testutil.Mount, func()) {
	t.Helper()
	marker := filepath.Join(t.TempDir(), "killed")
	t.Setenv(fusefs.KillBeforeReplyEnv, op+":"+marker)
	m := mountSupervised(t)
	os.Unsetenv(fusefs.KillBeforeReplyEnv) // for other mounts; the supervisor has it
	first := m.WaitServerPID(t)
	return m, func() {
		t.Helper()
		if !exists(marker) {
			t.Fatalf("the server never died before answering a %s: the test proves nothing\n%s", op, m.LogText())
		}
		deadline := time.Now().Add(20 * time.Second)
		for pid := m.ServerPID(t); pid == first || pid == 0; pid = m.ServerPID(t) {
			if time.Now().After(deadline) {
				t.Fatalf("no successor after the server died before a %s reply\n%s", op, m.LogText())
			}
			time.Sleep(5 * time.Millisecond)
		}
		if !strings.Contains(m.LogText(), "answered a resent request") {
			t.Errorf("the successor did not answer the resent %s from the journal\n%s", op, m.LogText())
		}
	}
}

// TestResentRequestRunsOnce: an exclusive create, a mkdir, a symlink, a
// hard link, an rmdir, an unlink and a rename whose server died between
// committing and answering succeed, and did what they say.
func TestResentRequestRunsOnce(t *testing.T) {
	cases := []struct {
		op    string
		setup func(m *testutil.Mount) error
		run   func(m *testutil.Mount) error
		check func(m *testutil.Mount) error
	}{
		{"create", nil, func(m *testutil.Mount) error {
			f, err := os.OpenFile(m.Path("new"), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
			if err != nil {
				return err
			}
			if _, err := f.Write([]byte("mine")); err != nil {
				return err
			}
			return f.Close()
		}, func(m *testutil.Mount) error { return wantFile(m.Path("new"), "mine") }},
		{"mkdir", nil, func(m *testutil.Mount) error { return os.Mkdir(m.Path("dir"), 0o755) },
			func(m *testutil.Mount) error { return wantDir(m.Path("dir")) }},
		{"symlink", nil, func(m *testutil.Mount) error { return os.Symlink("target", m.Path("link")) },
			func(m *testutil.Mount) error {
				if got, err := os.Readlink(m.Path("link")); err != nil || got != "target" {
					return fmt.Errorf("the symlink reads %q (%v)", got, err)
				}
				return nil
			}},
		{"link", touch("file"), func(m *testutil.Mount) error { return os.Link(m.Path("file"), m.Path("hard")) },
			func(m *testutil.Mount) error { return wantFile(m.Path("hard"), "") }},
		{"rmdir", func(m *testutil.Mount) error { return os.Mkdir(m.Path("empty"), 0o755) },
			func(m *testutil.Mount) error { return syscall.Rmdir(m.Path("empty")) },
			func(m *testutil.Mount) error { return wantGone(m.Path("empty")) }},
		{"unlink", touch("victim"), func(m *testutil.Mount) error { return os.Remove(m.Path("victim")) },
			func(m *testutil.Mount) error { return wantGone(m.Path("victim")) }},
		{"rename", touch("old"), func(m *testutil.Mount) error { return os.Rename(m.Path("old"), m.Path("renamed")) },
			func(m *testutil.Mount) error {
				if err := wantGone(m.Path("old")); err != nil {
					return err
				}
				return wantFile(m.Path("renamed"), "")
			}},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			m, crashed := crashBeforeReply(t, c.op)
			if c.setup != nil {
				if err := c.setup(m); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.run(m); err != nil {
				t.Fatalf("%s across a crash before its reply: %v", c.op, err)
			}
			crashed()
			if err := c.check(m); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func touch(name string) func(m *testutil.Mount) error {
	return func(m *testutil.Mount) error { return os.WriteFile(m.Path(name), nil, 0o644) }
}

func wantFile(path, content string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if string(b) != content {
		return errors.New(path + " holds " + string(b) + ", want " + content)
	}
	return nil
}

func wantDir(path string) error {
	st, err := os.Stat(path)
	if err == nil && !st.IsDir() {
		return errors.New(path + " is not a directory")
	}
	return err
}

func wantGone(path string) error {
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		return errors.New(path + " still exists")
	}
	return nil
}

// TestResentAppendWritesOnce: an O_APPEND write journaled but not
// answered is replayed by the successor and resent by the kernel; the
// file holds it once. Read back through a second mount, which has no
// page cache of the file.
func TestResentAppendWritesOnce(t *testing.T) {
	m, crashed := crashBeforeReply(t, "write")
	f, err := os.OpenFile(m.Path("log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("first line\n")); err != nil {
		t.Fatalf("an append across a crash before its reply: %v", err)
	}
	crashed()
	if _, err := f.Write([]byte("second line\n")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(otherMount(t, m).Path("log"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "first line\nsecond line\n"; string(got) != want {
		t.Fatalf("the file holds %q, want %q", got, want)
	}
}

// TestResentOpenReleased: an open whose server died after journaling the
// handle and before answering gets that handle (adopted by the successor),
// so its close releases the file: unlinked meanwhile, it is purged from
// the engine, not kept as an orphan the mount holds open until it ends.
func TestResentOpenReleased(t *testing.T) {
	m, crashed := crashBeforeReply(t, "open")
	data := bytes.Repeat([]byte("held "), 200<<10)
	if err := os.WriteFile(m.Path("held"), data, 0o644); err != nil { // a create, not an open
		t.Fatal(err)
	}
	f, err := os.Open(m.Path("held"))
	if err != nil {
		t.Fatalf("an open across a crash before its reply: %v", err)
	}
	crashed()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(m.Path("held")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data))
	if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("reading the unlinked file through the resent open's descriptor: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	eng, _, err := volume.Load(ctx, m.Vol.MetaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := eng.Getattr(ctx, meta.Ino(st.Ino))
		if errors.Is(err, syscall.ENOENT) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after its last close the unlinked file (inode %d) is still in the engine (%v): a handle of it is still open\n%s", st.Ino, err, m.LogText())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
