package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// TestSnapshotCommands: create, list (text and JSON), restore of a tree
// with what was there kept aside, delete, and the errors, through the
// real binary on a mounted volume.
func TestSnapshotCommands(t *testing.T) {
	v := testutil.NewVolume(t)
	m := v.Mount(t)
	ok(t, os.MkdirAll(m.Path("site/up"), 0o755), "mkdir")
	before := randBytes(3, 3<<20)
	writeFile(t, m.Path("site/up/a"), before, 0o644)
	writeFile(t, m.Path("site/index"), []byte("v1"), 0o644)

	res := testutil.MustRun(t, "snapshot", "create", v.MetaURL, "nightly")
	if !strings.Contains(res.Stdout, "/.snapshots/nightly") {
		t.Errorf("create printed %q", res.Stdout)
	}
	testutil.MustRun(t, "snapshot", "create", v.MetaURL, "site-only", "--path", "/site")
	res = testutil.MustRun(t, "snapshot", "list", v.MetaURL, "--json")
	var list []map[string]any
	ok(t, json.Unmarshal([]byte(res.Stdout), &list), "list --json")
	if len(list) != 2 || list[0]["name"] != "nightly" || list[1]["path"] != "/site" || list[0]["inodes"].(float64) != 5 {
		t.Fatalf("list --json: %s", res.Stdout)
	}
	if res := testutil.MustRun(t, "snapshot", "list", v.MetaURL); !strings.Contains(res.Stdout, "site-only") {
		t.Errorf("list: %q", res.Stdout)
	}

	// Damage the live tree, then restore one directory from each snapshot.
	writeFile(t, m.Path("site/up/a"), []byte("overwritten"), 0o644)
	ok(t, os.Remove(m.Path("site/index")), "rm")
	res = testutil.MustRun(t, "snapshot", "restore", v.MetaURL, "nightly", "--path", "/site/up")
	if !strings.Contains(res.Stdout, "before-restore") {
		t.Errorf("restore printed %q", res.Stdout)
	}
	// The restore is another client's rename: names show within the
	// mount's entry timeout (1 s).
	time.Sleep(1500 * time.Millisecond)
	wantContent(t, m.Path("site/up/a"), before)
	entries, err := os.ReadDir(m.Path("site"))
	ok(t, err, "readdir")
	var aside string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "up.before-restore-") {
			aside = e.Name()
		}
	}
	if aside == "" {
		t.Fatalf("nothing kept aside: %v", entries)
	}
	wantContent(t, m.Path("site", aside, "a"), []byte("overwritten"))
	testutil.MustRun(t, "snapshot", "restore", v.MetaURL, "site-only", "--path", "index")
	time.Sleep(1500 * time.Millisecond)
	wantContent(t, m.Path("site/index"), []byte("v1"))
	// Restored files are writable.
	writeFile(t, m.Path("site/index"), []byte("v2"), 0o644)

	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"create", v.MetaURL, "nightly"}, 1},
		{[]string{"create", v.MetaURL, "x", "--path", "/missing"}, 4},
		{[]string{"create", v.MetaURL, "a/b"}, 2},
		{[]string{"create", v.MetaURL, "x", "--path", "/.snapshots"}, 2},
		{[]string{"restore", v.MetaURL, "nightly"}, 2},
		{[]string{"restore", v.MetaURL, "nope", "--path", "/site"}, 4},
		{[]string{"delete", v.MetaURL, "nope"}, 4},
	} {
		res := testutil.Run(t, append([]string{"snapshot"}, c.args...)...)
		if res.Code != c.code || res.Stderr == "" {
			t.Errorf("snapshot %v: exit %d (%q), want %d with a message", c.args, res.Code, res.Stderr, c.code)
		}
	}
	testutil.MustRun(t, "snapshot", "delete", v.MetaURL, "nightly")
	time.Sleep(1500 * time.Millisecond)
	wantGone(t, m.Path(".snapshots/nightly/site"))
	if res := testutil.MustRun(t, "fsck", v.MetaURL); res.Code != 0 {
		t.Fatalf("fsck: %s", res.Stdout)
	}
}
