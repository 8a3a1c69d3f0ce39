package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"shoal/internal/testutil"
)

// textBytes returns n bytes of text that compresses well but not
// trivially (numbers vary line by line).
func textBytes(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%08d a line of a log file, status=%d, path=/srv/www/site%d/index.html\n", i, 200+i%7, i%13)
	}
	return b.Bytes()[:n]
}

// TestCompressedVolume formats a volume with each block compression,
// writes a compressible and an incompressible file, and reads them back
// whole and by range after a remount (so from the store). status must
// show a ratio above 1 and fsck and gc must find the volume clean; the
// stored objects must hold frames, not the plain bytes.
func TestCompressedVolume(t *testing.T) {
	testutil.RequireFUSE(t)
	for _, alg := range []string{"zstd", "lz4"} {
		t.Run(alg, func(t *testing.T) {
			v := testutil.NewVolumeWith(t, testutil.VolumeConfig{ExtraFormatArgs: []string{"--compress", alg}})
			text, random := textBytes(9<<20+123), randBytes(5, 5<<20)
			m := v.Mount(t)
			writeFile(t, m.Path("log.txt"), text, 0o644)
			writeFile(t, m.Path("random.bin"), random, 0o644)
			m.Unmount(t)

			m = v.Mount(t)
			wantContent(t, m.Path("log.txt"), text)
			wantContent(t, m.Path("random.bin"), random)
			m.Unmount(t)
			m = v.Mount(t) // ranges from the store, not the mount's block cache
			readRanges(t, m.Path("log.txt"), text)
			readRanges(t, m.Path("random.bin"), random)
			m.Unmount(t)

			checkStoredFrames(t, v, text)
			checkRatio(t, v, alg)
			testutil.MustRun(t, "fsck", v.MetaURL)
			testutil.MustRun(t, "gc", v.MetaURL) // exits non-zero on missing or mismatched blocks
			checkDumpLoad(t, v, alg, text)
		})
	}
}

// readRanges reads a few small ranges at odd offsets with a cold cache:
// ranged reads of compressed and raw blocks.
func readRanges(t *testing.T, path string, want []byte) {
	t.Helper()
	dropCache(t, path)
	f, err := os.Open(path)
	ok(t, err, "open")
	defer f.Close()
	for _, off := range []int64{int64(len(want)) / 2, 4<<20 + 4093, 1, int64(len(want)) - 10} {
		buf := make([]byte, min(4096, int64(len(want))-off))
		_, err := f.ReadAt(buf, off)
		ok(t, err, "pread")
		if !bytes.Equal(buf, want[off:off+int64(len(buf))]) {
			t.Fatalf("%s: pread at %d differs", path, off)
		}
	}
}

// checkStoredFrames checks that the bucket holds less than the text and
// that no object holds a run of the text as plain bytes.
func checkStoredFrames(t *testing.T, v *testutil.Volume, text []byte) {
	t.Helper()
	needle := text[1<<20 : 1<<20+200]
	for _, p := range v.BlockObjects(t) {
		b, err := os.ReadFile(filepath.Join(v.Bucket, p))
		ok(t, err, "read object")
		if bytes.Contains(b, needle) {
			t.Fatalf("object %s holds the text uncompressed", p)
		}
	}
}

// checkRatio reads the compression ratio from status, text and JSON.
func checkRatio(t *testing.T, v *testutil.Volume, alg string) {
	t.Helper()
	text := testutil.MustRun(t, "status", v.MetaURL).Stdout
	if !strings.Contains(text, "Compression "+alg+", ratio ") {
		t.Errorf("status has no %s ratio:\n%s", alg, text)
	}
	var doc map[string]any
	out := testutil.MustRun(t, "status", "--json", v.MetaURL).Stdout
	ok(t, json.Unmarshal([]byte(out), &doc), "status --json")
	ratio, _ := lookup(doc, []string{"compression", "ratio"})
	if r, isNum := ratio.(float64); !isNum || r < 1.5 {
		t.Errorf("status --json compression.ratio = %v, want > 1.5 (9 MiB of text, 5 MiB random)\n%s", ratio, out)
	}
	if c, _ := lookup(doc, []string{"format", "compression"}); c != alg {
		t.Errorf("status --json format.compression = %v, want %s", c, alg)
	}
}

// TestPlainVolumeStatus: a volume without compression says so and keeps
// format version 2 (older binaries still open it).
func TestPlainVolumeStatus(t *testing.T) {
	v := testutil.NewVolume(t)
	text := testutil.MustRun(t, "status", v.MetaURL).Stdout
	if !strings.Contains(text, "Compression none") || !strings.Contains(text, "version 2,") {
		t.Errorf("status of a plain volume:\n%s", text)
	}
	res := testutil.Run(t, "format", v.MetaURL, "--force", "--compress", "zstd", "--storage", "file", "--bucket", v.Bucket)
	if res.Code == 0 || !strings.Contains(res.Stderr, "cannot change the compression") {
		t.Errorf("format --force --compress zstd over a plain volume: exit %d\n%s", res.Code, res.Stderr)
	}
}

// checkDumpLoad dumps the volume and loads the dump as a copy sharing the
// bucket: the copy compresses like its source and reads its files.
func checkDumpLoad(t *testing.T, v *testutil.Volume, alg string, text []byte) {
	t.Helper()
	dump := filepath.Join(v.Dir, "vol.dump")
	testutil.MustRun(t, "dump", "--progress=never", v.MetaURL, dump)
	copyURL := "sqlite://" + filepath.Join(v.Dir, "copy.db")
	testutil.MustRun(t, "load", "--progress=never", copyURL, dump)
	if out := testutil.MustRun(t, "status", copyURL).Stdout; !strings.Contains(out, "Compression "+alg) {
		t.Errorf("status of the loaded copy:\n%s", out)
	}
	cp := &testutil.Volume{Dir: v.Dir, MetaURL: copyURL, Bucket: v.Bucket, Mountpoint: v.Mountpoint}
	m := cp.Mount(t)
	wantContent(t, m.Path("log.txt"), text)
	m.Unmount(t)
}
