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

// Requests caught by a crash: the test hook fusefs.KillEnv kills the
// server inside an operation, and the kernel resends the request to the
// successor. At each stage — its intent journaled and nothing committed,
// committed in the engine with no reply journaled, its reply journaled
// and not written to the kernel — the application must see the
// operation's own outcome, once: no EEXIST for its own create, no ENOENT
// for its own unlink, no exchange undone, no bytes appended twice, no
// handle left open.

// stages are the hook's stages, and what the successor logs when it
// answers the resent request without running it blind ("" for a request
// that had not committed, which simply runs).
var stages = []struct{ name, logged string }{
	{"intent", ""},
	{"commit", "had committed when the previous server died"},
	{"reply", "answered a resent request with the reply the previous server journaled"},
}

// crashAt mounts a fresh volume whose server kills itself the first time
// an op request reaches stage. The returned func fails t unless that
// happened, a successor serves, and it logged what it answered with.
func crashAt(t *testing.T, stage, op, logged string) (*testutil.Mount, func()) {
	t.Helper()
	return crashOn(t, testutil.NewVolume(t), stage, op, logged)
}

// crashOn is crashAt on the volume v.
func crashOn(t *testing.T, v *testutil.Volume, stage, op, logged string) (*testutil.Mount, func()) {
	t.Helper()
	marker := filepath.Join(t.TempDir(), "killed")
	t.Setenv(fusefs.KillEnv, stage+":"+op+":"+marker)
	m := v.Mount(t)
	os.Unsetenv(fusefs.KillEnv) // for other mounts; the supervisor has it
	first := m.WaitServerPID(t)
	return m, func() {
		t.Helper()
		if !exists(marker) {
			t.Fatalf("the server never died at the %s stage of a %s: the test proves nothing\n%s", stage, op, m.LogText())
		}
		deadline := time.Now().Add(20 * time.Second)
		for pid := m.ServerPID(t); pid == first || pid == 0; pid = m.ServerPID(t) {
			if time.Now().After(deadline) {
				t.Fatalf("no successor after the server died at the %s stage of a %s\n%s", stage, op, m.LogText())
			}
			time.Sleep(5 * time.Millisecond)
		}
		if logged != "" && !strings.Contains(m.LogText(), logged) {
			t.Errorf("the successor did not log %q for the resent %s\n%s", logged, op, m.LogText())
		}
	}
}

// TestResentRequestRunsOnce: an exclusive create, a mknod, a mkdir, a
// symlink, a hard link, an rmdir, an unlink, a rename, an exchange, an
// exclusive setxattr and a removexattr whose server died at any stage
// succeed, and did what they say, once.
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
		{"mknod", nil, func(m *testutil.Mount) error { return syscall.Mkfifo(m.Path("fifo"), 0o644) },
			func(m *testutil.Mount) error {
				st, err := os.Lstat(m.Path("fifo"))
				if err == nil && st.Mode()&os.ModeNamedPipe == 0 {
					return fmt.Errorf("fifo is a %v", st.Mode())
				}
				return err
			}},
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
			func(m *testutil.Mount) error {
				st, err := os.Stat(m.Path("hard"))
				if err != nil {
					return err
				}
				if n := st.Sys().(*syscall.Stat_t).Nlink; n != 2 {
					return fmt.Errorf("the linked file has %d links, want 2", n)
				}
				return nil
			}},
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
		{"rename", func(m *testutil.Mount) error {
			if err := os.WriteFile(m.Path("a"), []byte("was a"), 0o644); err != nil {
				return err
			}
			return os.WriteFile(m.Path("b"), []byte("was b"), 0o644)
		}, func(m *testutil.Mount) error {
			return unix.Renameat2(unix.AT_FDCWD, m.Path("a"), unix.AT_FDCWD, m.Path("b"), unix.RENAME_EXCHANGE)
		}, func(m *testutil.Mount) error {
			if err := wantFile(m.Path("a"), "was b"); err != nil {
				return err
			}
			return wantFile(m.Path("b"), "was a")
		}},
		{"setxattr", touch("attrs"), func(m *testutil.Mount) error {
			return unix.Setxattr(m.Path("attrs"), "user.mine", []byte("v1"), unix.XATTR_CREATE)
		}, func(m *testutil.Mount) error {
			buf := make([]byte, 16)
			n, err := unix.Getxattr(m.Path("attrs"), "user.mine", buf)
			if err != nil || string(buf[:n]) != "v1" {
				return fmt.Errorf("user.mine reads %q (%v)", buf[:max(n, 0)], err)
			}
			return nil
		}},
		{"removexattr", func(m *testutil.Mount) error {
			if err := os.WriteFile(m.Path("attrs"), nil, 0o644); err != nil {
				return err
			}
			return unix.Setxattr(m.Path("attrs"), "user.gone", []byte("v"), 0)
		}, func(m *testutil.Mount) error { return unix.Removexattr(m.Path("attrs"), "user.gone") },
			func(m *testutil.Mount) error {
				if _, err := unix.Getxattr(m.Path("attrs"), "user.gone", nil); !errors.Is(err, unix.ENODATA) {
					return fmt.Errorf("user.gone after its removal: %v", err)
				}
				return nil
			}},
	}
	for _, st := range stages {
		for i, c := range cases {
			t.Run(fmt.Sprintf("%s/%s-%d", st.name, c.op, i), func(t *testing.T) {
				m, crashed := crashAt(t, st.name, c.op, st.logged)
				if c.setup != nil {
					if err := c.setup(m); err != nil {
						t.Fatal(err)
					}
				}
				if err := c.run(m); err != nil {
					t.Fatalf("%s across a crash at its %s stage: %v", c.op, st.name, err)
				}
				crashed()
				if err := c.check(m); err != nil {
					t.Fatal(err)
				}
			})
		}
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
	m, crashed := crashAt(t, "reply", "write", stages[2].logged)
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
	m, crashed := crashAt(t, "reply", "open", stages[2].logged)
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
