package trash

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
	"shoal/tests/isolate"
)

// engines are the metadata engines the tests run on; url returns a
// META-URL ("" for SQLite in the volume's directory).
var engines = []struct {
	name string
	url  func(t *testing.T) string
}{
	{"sqlite", func(*testing.T) string { return "" }},
	{"postgres", func(t *testing.T) string { return isolate.PGSchemaURL(t, testutil.PGURL(t)) }},
	{"redis", func(t *testing.T) string { return isolate.RedisNamespaceURL(t, testutil.RedisURL(t)) }},
}

// forEngines runs fn on a fresh volume of each engine, formatted with
// extra format flags.
func forEngines(t *testing.T, fn func(t *testing.T, v *testutil.Volume), extra ...string) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			testutil.RequireFUSE(t)
			v := testutil.NewVolumeWith(t, testutil.VolumeConfig{MetaURL: e.url(t), ExtraFormatArgs: extra})
			fn(t, v)
		})
	}
}

func ok(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return b
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	ok(t, os.WriteFile(path, data, 0o644), "write "+path)
}

func wantContent(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	ok(t, err, "read "+path)
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes differ from the %d written", path, len(got), len(want))
	}
}

// used is the mount's used space as df sees it.
func used(t *testing.T, dir string) uint64 {
	t.Helper()
	var st unix.Statfs_t
	ok(t, unix.Statfs(dir, &st), "statfs")
	return (st.Blocks - st.Bfree) * uint64(st.Bsize)
}

// eventually polls cond for up to limit.
func eventually(limit time.Duration, cond func() bool) bool {
	for end := time.Now().Add(limit); ; time.Sleep(100 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// trashed maps original names to paths under /.trash, through the mount.
func trashed(t *testing.T, mnt string) map[string]string {
	t.Helper()
	hours, err := os.ReadDir(filepath.Join(mnt, ".trash"))
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}
	}
	ok(t, err, "readdir /.trash")
	out := map[string]string{}
	for _, h := range hours {
		ents, err := os.ReadDir(filepath.Join(mnt, ".trash", h.Name()))
		ok(t, err, "readdir hour")
		for _, e := range ents {
			parts := strings.SplitN(e.Name(), "-", 3)
			if len(parts) != 3 {
				t.Fatalf("trash entry %q is not PARENT-INO-NAME", e.Name())
			}
			out[parts[2]] = filepath.Join(mnt, ".trash", h.Name(), e.Name())
		}
	}
	return out
}

// TestTrash: with --trash-days 1, rm and mv-over put files in /.trash
// (visible through the mount, counted by df, refusing creates), an open
// file stays readable, restore brings content back byte-identical (a
// taken name gets NAME.restored-INO), and empty frees the space and the
// block objects.
func TestTrash(t *testing.T) {
	forEngines(t, testTrash, "--trash-days", "1")
}

func testTrash(t *testing.T, v *testutil.Volume) {
	m := v.Mount(t, "--delete-delay", "1s")
	ok(t, os.Mkdir(m.Path("d"), 0o755), "mkdir")
	big, small, held, oldOver, newer := randBytes(3<<20+17), randBytes(100), randBytes(5000), randBytes(7000), randBytes(300)
	write(t, m.Path("d/big"), big)
	write(t, m.Path("d/b"), small)
	write(t, m.Path("d/held"), held)
	write(t, m.Path("d/over"), oldOver)
	write(t, m.Path("d/new"), newer)
	ok(t, os.Symlink("big", m.Path("d/ln")), "symlink")
	f, err := os.Open(m.Path("d/held"))
	ok(t, err, "open held")
	defer f.Close()
	before := used(t, m.Dir)

	for _, name := range []string{"big", "b", "held", "ln"} {
		ok(t, os.Remove(m.Path("d", name)), "rm "+name)
	}
	ok(t, os.Rename(m.Path("d/new"), m.Path("d/over")), "mv over")
	got := make([]byte, len(held))
	_, err = f.ReadAt(got, 0)
	ok(t, err, "read the open file after rm")
	if !bytes.Equal(got, held) {
		t.Fatal("the open file reads other bytes after rm")
	}

	tr := trashed(t, m.Dir)
	for _, name := range []string{"big", "b", "held", "ln", "over"} {
		if tr[name] == "" {
			t.Fatalf("%s is not in /.trash: %v", name, tr)
		}
	}
	wantContent(t, tr["big"], big)
	wantContent(t, tr["over"], oldOver)
	if target, err := os.Readlink(tr["ln"]); err != nil || target != "big" {
		t.Fatalf("trashed symlink: %q, %v", target, err)
	}
	hour := filepath.Dir(tr["big"])
	err = os.WriteFile(filepath.Join(hour, "x"), nil, 0o644)
	if !errors.Is(err, syscall.EPERM) {
		t.Fatalf("create in /.trash: %v, want EPERM", err)
	}
	if after := used(t, m.Dir); after < before {
		t.Fatalf("df: %d bytes used after rm, %d before: the trash must count", after, before)
	}
	status := testutil.MustRun(t, "status", v.MetaURL).Stdout
	if !strings.Contains(status, "Trash       on, deleted files kept 1 day") {
		t.Fatalf("status does not show the trash:\n%s", status)
	}
	list := testutil.MustRun(t, "trash", "list", v.MetaURL).Stdout
	if !strings.Contains(list, "/d/big") || !strings.Contains(list, "3.0 MiB") {
		t.Fatalf("trash list does not show /d/big:\n%s", list)
	}

	write(t, m.Path("d/b"), []byte("a new b"))
	out := testutil.MustRun(t, "trash", "restore", v.MetaURL, "--all").Stdout
	t.Logf("restore:\n%s", out)
	for _, want := range []string{"-> /d/big\n", "-> /d/held\n", "-> /d/ln\n", "/d/b.restored-", "(the name is taken)", "/d/over.restored-"} {
		if !strings.Contains(out, want) {
			t.Fatalf("restore output lacks %q:\n%s", want, out)
		}
	}
	if !eventually(5*time.Second, func() bool { _, err := os.Stat(m.Path("d/big")); return err == nil }) {
		t.Fatal("d/big does not come back through the mount")
	}
	wantContent(t, m.Path("d/big"), big)
	wantContent(t, m.Path("d/held"), held)
	wantContent(t, m.Path("d/b"), []byte("a new b"))
	wantContent(t, m.Path("d/over"), newer)
	alt, _ := filepath.Glob(m.Path("d/b.restored-*"))
	altOver, _ := filepath.Glob(m.Path("d/over.restored-*"))
	if len(alt) != 1 || len(altOver) != 1 {
		t.Fatalf("alternative names: %v %v", alt, altOver)
	}
	wantContent(t, alt[0], small)
	wantContent(t, altOver[0], oldOver)
	if target, err := os.Readlink(m.Path("d/ln")); err != nil || target != "big" {
		t.Fatalf("restored symlink: %q, %v", target, err)
	}

	blocks := len(v.BlockObjects(t))
	full := used(t, m.Dir)
	ok(t, os.Remove(m.Path("d/big")), "rm big again")
	out = testutil.MustRun(t, "trash", "empty", v.MetaURL).Stdout
	if !strings.Contains(out, "deleted 1 files") {
		t.Fatalf("trash empty: %s", out)
	}
	if !eventually(10*time.Second, func() bool { return used(t, m.Dir) <= full-3<<20 }) {
		t.Fatalf("df: %d bytes used after emptying, %d before", used(t, m.Dir), full)
	}
	if !eventually(20*time.Second, func() bool { return len(v.BlockObjects(t)) < blocks }) {
		t.Fatalf("%d block objects after emptying the trash, %d before", len(v.BlockObjects(t)), blocks)
	}
	if tr := trashed(t, m.Dir); len(tr) != 0 {
		t.Fatalf("the trash holds %v after empty", tr)
	}
}

// TestTrashOff: without --trash-days nothing goes to the trash; `shoal
// trash days` turns it on for the running mount.
func TestTrashOff(t *testing.T) {
	forEngines(t, testTrashOff)
}

func testTrashOff(t *testing.T, v *testutil.Volume) {
	m := v.Mount(t)
	write(t, m.Path("f"), randBytes(1000))
	write(t, m.Path("g"), randBytes(1000))
	ok(t, os.Remove(m.Path("f")), "rm")
	if _, err := os.Stat(m.Path(".trash")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("/.trash with the trash off: %v", err)
	}
	if out := testutil.MustRun(t, "trash", "list", v.MetaURL).Stdout; !strings.Contains(out, "the trash is empty") {
		t.Fatalf("trash list with the trash off: %s", out)
	}
	testutil.MustRun(t, "trash", "days", v.MetaURL, "1")
	time.Sleep(4 * time.Second) // mounts re-read the setting every 3 s
	ok(t, os.Remove(m.Path("g")), "rm after trash days 1")
	if tr := trashed(t, m.Dir); tr["g"] == "" {
		t.Fatalf("after 'trash days 1' the running mount does not keep g: %v", tr)
	}
}
