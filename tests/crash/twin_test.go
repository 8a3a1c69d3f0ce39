package crash

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"shoal/internal/testutil"
	"shoal/tests/isolate"
)

// TestLoadedCopySharesBucket is issue 13: `shoal load` of a dump into a
// second engine makes a copy whose files refer to the same blocks as the
// original's. Deleting files on either, with mounts that delete freed data
// at once, and gc on both, must lose no block the other still reads; the
// copy starts with no mounts of the original's and can be repaired at
// once; and once the copy's claim is released, the original collects its
// garbage again while the copy can no longer be mounted.
func TestLoadedCopySharesBucket(t *testing.T) {
	embedded := func(t *testing.T) *testutil.Volume { return testutil.NewVolume(t) }
	for _, tc := range []struct {
		name    string
		orig    func(t *testing.T) *testutil.Volume
		metaURL func(t *testing.T) string
	}{
		{"sqlite", embedded, func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "copy.db") }},
		{"postgres", embedded, func(t *testing.T) string { return pgSchema(t, testutil.PGURL(t)) }},
		{"redis-s3", func(t *testing.T) *testutil.Volume {
			return isolate.FormatS3(t, isolate.RedisNamespaceURL(t, testutil.RedisURL(t)), testutil.S3URL(t))
		}, func(t *testing.T) string { return pgSchema(t, testutil.PGURL(t)) }},
	} {
		t.Run(tc.name, func(t *testing.T) { testLoadedCopy(t, tc.orig(t), tc.metaURL(t)) })
	}
}

func testLoadedCopy(t *testing.T, vol *testutil.Volume, copyURL string) {
	orig := map[string][]byte{}
	m := vol.Mount(t)
	for i := range 3 {
		for _, kind := range []string{"keep", "copydel", "origdel"} {
			name := fmt.Sprintf("%s-%d", kind, i)
			orig[name] = randomFile(uint64(len(orig)+40), 150<<10+i*4099)
			mustDo(t, os.WriteFile(m.Path(name), orig[name], 0o644))
		}
	}
	// The dump is taken while mounted, with a file unlinked but open:
	// it carries the mount's session and an orphan.
	held, err := os.Create(m.Path("held"))
	mustDo(t, err)
	_, err = held.Write(randomFile(99, 70<<10))
	mustDo(t, err)
	mustDo(t, held.Sync())
	mustDo(t, os.Remove(m.Path("held")))
	dump := filepath.Join(vol.Dir, "twin.dump")
	testutil.MustRun(t, "dump", "--progress=never", vol.MetaURL, dump)
	mustDo(t, held.Close())
	m.Unmount(t)

	res := testutil.MustRun(t, "load", "--progress=never", copyURL, dump)
	if !contains(res.Stderr, "shared by 2 volumes", "purged 1 ") {
		t.Errorf("load does not say that the bucket is shared and the orphan purged:\n%s", res.Stderr)
	}
	checkFreshCopy(t, vol.MetaURL, copyURL)

	cp := &testutil.Volume{Dir: vol.Dir, MetaURL: copyURL, Bucket: vol.Bucket, Mountpoint: vol.Mountpoint}
	copyWant := editFiles(t, cp, orig, "copydel-", "copy-new", 1)
	origWant := editFiles(t, vol, orig, "origdel-", "orig-new", 2)

	for _, url := range []string{vol.MetaURL, copyURL} {
		res := testutil.Run(t, "gc", "--progress=never", "--grace", "0s", "--delete-freed", url)
		if res.Code == 0 || !contains(res.Stderr, "claimed by 2 volumes", "shoal claims --release") {
			t.Errorf("gc of a shared bucket: exit %d\n%s\n%s", res.Code, res.Stdout, res.Stderr)
		}
	}
	checkVolume(t, vol, origWant)
	checkVolume(t, cp, copyWant)

	// The copy is retired: release its claim. The original deletes again,
	// and still reads everything; the copy is refused.
	testutil.MustRun(t, "claims", "--release", volumeUUID(t, copyURL), vol.MetaURL)
	res = testutil.MustRun(t, "gc", "--progress=never", "--grace", "0s", "--delete-freed", vol.MetaURL)
	if !strings.Contains(res.Stdout, "Deleted ") || strings.Contains(res.Stdout, "Deleted     0 objects") {
		t.Errorf("gc after the release deleted nothing:\n%s", res.Stdout)
	}
	checkVolume(t, vol, origWant)
	res = testutil.RunTimeout(t, time.Minute, "mount", copyURL, vol.Mountpoint)
	if res.Code == 0 || !contains(res.Stderr, "not by this volume", "shoal claims --add") {
		t.Errorf("mount of the released copy: exit %d\n%s", res.Code, res.Stderr)
	}
}

// checkFreshCopy: the copy has a uuid of its own, lists no mounts, and
// fsck --repair runs at once (no live-looking session blocks it).
func checkFreshCopy(t *testing.T, origURL, copyURL string) {
	t.Helper()
	if a, b := volumeUUID(t, origURL), volumeUUID(t, copyURL); a == b {
		t.Errorf("the copy kept the original's uuid %s", a)
	}
	var st struct {
		Sessions []json.RawMessage `json:"sessions"`
	}
	mustDo(t, json.Unmarshal([]byte(testutil.MustRun(t, "status", "--json", copyURL).Stdout), &st))
	if len(st.Sessions) != 0 {
		t.Errorf("the loaded copy lists %d mounts of the original", len(st.Sessions))
	}
	if rep, res := runFsck(t, copyURL, "--repair"); res.Code != 0 || rep.Damage() {
		t.Errorf("fsck --repair of the fresh copy: exit %d\n%s\n%s", res.Code, res.Stdout, res.Stderr)
	}
}

// editFiles mounts v with freed data deleted at once, removes the files
// named with prefix, writes a new file, and waits until the mount has
// held back the deletes of the freed data. It returns the files v holds.
func editFiles(t *testing.T, v *testutil.Volume, files map[string][]byte, prefix, newName string, seed uint64) map[string][]byte {
	t.Helper()
	want := map[string][]byte{}
	m := v.Mount(t, "--delete-delay", "10ms")
	for name, b := range files {
		if strings.HasPrefix(name, prefix) {
			mustDo(t, os.Remove(m.Path(name)))
		} else {
			want[name] = b
		}
	}
	want[newName] = randomFile(seed, 300<<10)
	mustDo(t, os.WriteFile(m.Path(newName), want[newName], 0o644))
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(m.LogText(), "freed data is kept, not deleted") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(m.LogText(), "freed data is kept, not deleted") {
		t.Errorf("the mount of %s never held back deleting freed data:\n%s", v.MetaURL, m.LogText())
	}
	m.Unmount(t)
	return want
}

// checkVolume: fsck finds nothing missing or damaged, and v holds exactly
// the files of want, byte for byte.
func checkVolume(t *testing.T, v *testutil.Volume, want map[string][]byte) {
	t.Helper()
	if rep, res := runFsck(t, v.MetaURL); res.Code != 0 || rep.Damage() || len(rep.Damaged) > 0 {
		t.Errorf("fsck of %s: exit %d\n%s\n%s", v.MetaURL, res.Code, res.Stdout, res.Stderr)
	}
	m := v.Mount(t)
	defer m.Unmount(t)
	ents, err := os.ReadDir(m.Dir)
	mustDo(t, err)
	var got, names []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	for name, b := range want {
		names = append(names, name)
		data, err := os.ReadFile(m.Path(name))
		if err != nil || !bytes.Equal(data, b) {
			t.Errorf("%s of %s reads back wrong: %v", name, v.MetaURL, err)
		}
	}
	sort.Strings(names)
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("%s holds %v, want %v", v.MetaURL, got, names)
	}
}

// volumeUUID reads a volume's uuid with shoal status.
func volumeUUID(t *testing.T, metaURL string) string {
	t.Helper()
	var st struct {
		Format struct {
			UUID string `json:"uuid"`
		} `json:"format"`
	}
	mustDo(t, json.Unmarshal([]byte(testutil.MustRun(t, "status", "--json", metaURL).Stdout), &st))
	return st.Format.UUID
}
