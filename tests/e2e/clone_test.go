package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// TestClone: `shoal clone` copies a file or a tree through the mount in
// no time, sharing blocks: contents equal, hard links kept, each side
// written independently afterwards; the bytes a process wrote but has not
// closed yet are in the clone; a second mount sees the copy; wrong uses
// and missing rights get clear errors.
func TestClone(t *testing.T) {
	a, b := twoMounts(t)
	big := randBytes(7, 9<<20+5)
	ok(t, os.MkdirAll(a.Path("site/img"), 0o755), "mkdir")
	writeFile(t, a.Path("site/big"), big, 0o644)
	writeFile(t, a.Path("site/img/x"), []byte("x"), 0o600)
	ok(t, os.Link(a.Path("site/big"), a.Path("site/img/big-link")), "link")
	ok(t, os.Symlink("img/x", a.Path("site/ln")), "symlink")

	// A file being written by a process that holds it open: its
	// acknowledged bytes are in the clone.
	hold := testutil.HelperCmd(t, nil, "hold", a.Path("site/open"), "written before the clone")
	stdin, err := hold.StdinPipe()
	ok(t, err, "stdin pipe")
	out, err := hold.StdoutPipe()
	ok(t, err, "stdout pipe")
	ok(t, hold.Start(), "start holder")
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "held\n" {
		t.Fatalf("holder said %q", line)
	}
	res := testutil.MustRun(t, "clone", a.Path("site/open"), a.Path("open2"))
	if !strings.Contains(res.Stdout, "cloned") {
		t.Errorf("clone printed %q", res.Stdout)
	}
	wantContent(t, a.Path("open2"), []byte("written before the clone"))
	stdin.Close()
	ok(t, hold.Wait(), "holder")

	start := time.Now()
	testutil.MustRun(t, "clone", a.Path("site"), a.Path("site2"))
	t.Logf("a 9 MiB tree cloned in %v", time.Since(start))
	wantContent(t, a.Path("site2/big"), big)
	wantContent(t, a.Path("site2/img/x"), []byte("x"))
	if target, err := os.Readlink(a.Path("site2/ln")); err != nil || target != "img/x" {
		t.Errorf("cloned symlink %q, %v", target, err)
	}
	s1, s2 := stat(t, a.Path("site2/big")), stat(t, a.Path("site2/img/big-link"))
	if s1.Ino != s2.Ino || s1.Nlink != 2 {
		t.Errorf("hard link in the clone: inodes %d %d, nlink %d", s1.Ino, s2.Ino, s1.Nlink)
	}
	if s0 := stat(t, a.Path("site/big")); s0.Ino == s1.Ino {
		t.Error("the clone shares the source's inode")
	}
	// Copy on write, both ways; the other mount sees the copy.
	w, err := os.OpenFile(a.Path("site2/big"), os.O_WRONLY, 0)
	ok(t, err, "open clone")
	_, err = w.WriteAt([]byte("CHANGED"), 4<<20)
	ok(t, err, "write clone")
	ok(t, w.Close(), "close clone")
	wantContent(t, a.Path("site/big"), big)
	changed := append([]byte(nil), big...)
	copy(changed[4<<20:], "CHANGED")
	wantContent(t, b.Path("site2/big"), changed)
	wantContent(t, b.Path("site2/img/big-link"), changed)

	// Into an existing directory: under the source's name, as cp does.
	ok(t, os.Mkdir(a.Path("into"), 0o755), "mkdir")
	testutil.MustRun(t, "clone", a.Path("site/img/x"), a.Path("into"))
	wantContent(t, a.Path("into/x"), []byte("x"))

	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{a.Path("site/big"), a.Path("site2/big")}, 1, "exists"},
		{[]string{a.Path("site"), a.Path("site/img/inner")}, 2, "into itself"},
		{[]string{a.Path("nothing"), a.Path("n2")}, 4, "no such file"},
		{[]string{a.Path("site/big"), filepath.Join(t.TempDir(), "out")}, 2, "not in one Shoal mount"},
		{[]string{a.Path("site/big")}, 2, "takes 2 argument"},
	} {
		res := testutil.Run(t, append([]string{"clone"}, c.args...)...)
		if res.Code != c.code || !strings.Contains(res.Stderr, c.says) {
			t.Errorf("clone %v: exit %d, %q; want exit %d saying %q", c.args, res.Code, res.Stderr, c.code, c.says)
		}
	}

	// An unprivileged user: may clone what it can read into a directory
	// it can write, owns the copy, and may not clone a 0600 file of root's.
	ok(t, os.Mkdir(a.Path("pub"), 0o777), "mkdir")
	writeFile(t, a.Path("pub/readable"), []byte("r"), 0o644)
	asNobody := func(args ...string) (string, error) {
		cmd := exec.Command(testutil.Binary(t), append([]string{"clone"}, args...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	if out, err := asNobody(a.Path("pub/readable"), a.Path("pub/mine")); err != nil {
		t.Fatalf("clone as nobody: %v\n%s", err, out)
	}
	if st := stat(t, a.Path("pub/mine")); st.Uid != 65534 {
		t.Errorf("nobody's clone is owned by %d", st.Uid)
	}
	if out, err := asNobody(a.Path("site"), a.Path("pub/site")); err == nil || !strings.Contains(out, "permission denied") {
		t.Errorf("nobody cloned a tree with a 0600 file of root's: %v\n%s", err, out)
	}
	wantGone(t, a.Path("pub/site"))
}

// TestCloneVisibleAtOnce: a copy is there the moment `shoal clone`
// returns, though clone's own check of the destination left the kernel a
// negative entry for the name (the mount drops it only after answering
// the clone's request).
func TestCloneVisibleAtOnce(t *testing.T) {
	a, _ := twoMounts(t)
	writeFile(t, a.Path("src"), []byte("s"), 0o644)
	for i := range 30 {
		dst := a.Path(fmt.Sprint("copy", i))
		testutil.MustRun(t, "clone", a.Path("src"), dst)
		if _, err := os.Stat(dst); err != nil {
			t.Fatalf("clone %d: the copy is not there when clone returns: %v", i, err)
		}
	}
}
