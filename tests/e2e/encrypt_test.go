package e2e

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// marker is plaintext that must never reach the bucket of an encrypted
// volume, neither as file data nor as a file name (in metadata backups).
const marker = "SHOAL-PLAINTEXT-MARKER-7d1f"

// newEncrypted formats an embedded volume with --encrypt and a passphrase
// file, and returns it with the path of that file.
func newEncrypted(t *testing.T) (*testutil.Volume, string) {
	t.Helper()
	testutil.RequireFUSE(t)
	v := testutil.NewUnformatted(t, "")
	pass := filepath.Join(v.Dir, "pass")
	ok(t, os.WriteFile(pass, []byte("correct horse battery staple\n"), 0o600), "write passphrase")
	testutil.MustRun(t, "format", v.MetaURL, "--name", "sealed", "--storage", "file", "--bucket", v.Bucket,
		"--encrypt", "--passphrase-file", pass)
	return v, pass
}

// TestEncryptedVolume writes files whose data and names hold a marker to
// an encrypted volume, then checks that no object in the bucket holds the
// marker and that blocks and metadata backups are sealed objects; that the
// data reads back; that a wrong or missing passphrase is refused with a
// clear error; that a block moved under another block's name fails to
// read; and that fsck and gc work on the volume.
func TestEncryptedVolume(t *testing.T) {
	v, pass := newEncrypted(t)
	big := bytes.Repeat([]byte(marker+"\n"), (9<<20)/(len(marker)+1))
	small := []byte("small " + marker)
	m := v.Mount(t, "--passphrase-file", pass, "--backup-interval", "1s")
	writeFile(t, m.Path("big"), big, 0o644)
	writeFile(t, m.Path("name-"+marker), small, 0o644)
	waitForObject(t, v, "meta-backup/")
	m.Unmount(t)

	checkBucketSealed(t, v)
	m = v.Mount(t, "--passphrase-file", pass)
	wantContent(t, m.Path("big"), big)
	wantContent(t, m.Path("name-"+marker), small)
	m.Unmount(t)

	wrong := filepath.Join(v.Dir, "wrong")
	ok(t, os.WriteFile(wrong, []byte("not the passphrase\n"), 0o600), "write wrong passphrase")
	wantRefused(t, "wrong passphrase or key file for volume \"sealed\"",
		"mount", v.MetaURL, v.Mountpoint, "--passphrase-file", wrong)
	wantRefused(t, "the volume is encrypted", "mount", v.MetaURL, v.Mountpoint)
	wantRefused(t, "wrong passphrase or key file", "fsck", v.MetaURL, "--passphrase-file", wrong)

	testutil.MustRun(t, "fsck", v.MetaURL, "--passphrase-file", pass)
	testutil.MustRun(t, "gc", v.MetaURL)

	// Swap two blocks of the same size: each is a valid sealed object,
	// but under the other's name it must not open.
	blocks := sameSizeBlocks(t, v)
	a, b := filepath.Join(v.Bucket, blocks[0]), filepath.Join(v.Bucket, blocks[1])
	ok(t, os.Rename(a, a+".tmp"), "move")
	ok(t, os.Rename(b, a), "move")
	ok(t, os.Rename(a+".tmp", b), "move")
	m = v.Mount(t, "--passphrase-file", pass)
	_, err := os.ReadFile(m.Path("big"))
	if !errors.Is(err, syscall.EIO) {
		t.Errorf("read of a file whose blocks were swapped: %v, want EIO", err)
	}
	m.Unmount(t)
	res := testutil.Run(t, "fsck", v.MetaURL, "--passphrase-file", pass)
	if res.Code == 0 || !strings.Contains(res.Stdout, "corrupt") {
		t.Errorf("fsck after swapping blocks: exit %d, want the blocks reported corrupt\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
}

// TestEncryptedKeyRotation rotates the passphrase: the old one is refused
// afterwards, the new one opens the volume and the data is intact.
func TestEncryptedKeyRotation(t *testing.T) {
	v, pass := newEncrypted(t)
	data := randBytes(31, 300<<10)
	m := v.Mount(t, "--passphrase-file", pass)
	writeFile(t, m.Path("f"), data, 0o644)
	m.Unmount(t)

	next := filepath.Join(v.Dir, "next")
	ok(t, os.WriteFile(next, []byte("a new passphrase\n"), 0o600), "write new passphrase")
	wantRefused(t, "wrong passphrase or key file", "key", "rotate", v.MetaURL, "--passphrase-file", next, "--new-passphrase-file", next)
	testutil.MustRun(t, "key", "rotate", v.MetaURL, "--passphrase-file", pass, "--new-passphrase-file", next)
	wantRefused(t, "wrong passphrase or key file", "mount", v.MetaURL, v.Mountpoint, "--passphrase-file", pass)
	t.Setenv("SHOAL_PASSPHRASE", "a new passphrase")
	m = v.Mount(t) // the passphrase from the environment
	wantContent(t, m.Path("f"), data)
	m.Unmount(t)

	// A copy loaded from a dump has a new uuid and the same data key:
	// it opens with the same secret and reads the source's blocks.
	dump := filepath.Join(v.Dir, "dump.zst")
	testutil.MustRun(t, "dump", v.MetaURL, dump)
	cp := testutil.NewUnformatted(t, "")
	testutil.MustRun(t, "load", cp.MetaURL, dump)
	m = cp.Mount(t)
	wantContent(t, m.Path("f"), data)
}

// checkBucketSealed fails t if any object file holds the marker, or if a
// block or metadata backup is not a sealed object.
func checkBucketSealed(t *testing.T, v *testutil.Volume) {
	t.Helper()
	var sealed int
	for _, k := range v.ObjectFiles(t) {
		b, err := os.ReadFile(filepath.Join(v.Bucket, k))
		ok(t, err, "read object")
		if bytes.Contains(b, []byte(marker)) {
			t.Errorf("object %s holds plaintext", k)
		}
		k = filepath.ToSlash(k)
		if strings.HasPrefix(k, "chunks/") || strings.HasPrefix(k, "meta-backup/") {
			if !bytes.HasPrefix(b, []byte("SHEN")) {
				t.Errorf("object %s is not sealed (starts %q)", k, b[:min(len(b), 8)])
			}
			sealed++
		}
	}
	if sealed < 3 {
		t.Fatalf("only %d block and backup objects in the bucket", sealed)
	}
}

// waitForObject waits until an object under prefix is in the bucket.
func waitForObject(t *testing.T, v *testutil.Volume, prefix string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for _, k := range v.ObjectFiles(t) {
			if strings.HasPrefix(filepath.ToSlash(k), prefix) {
				return
			}
		}
	}
	t.Fatalf("no object under %s appeared", prefix)
}

// sameSizeBlocks returns two block objects of the same stored size.
func sameSizeBlocks(t *testing.T, v *testutil.Volume) []string {
	t.Helper()
	bySize := map[int64][]string{}
	for _, k := range v.BlockObjects(t) {
		fi, err := os.Stat(filepath.Join(v.Bucket, k))
		ok(t, err, "stat object")
		bySize[fi.Size()] = append(bySize[fi.Size()], k)
		if len(bySize[fi.Size()]) == 2 {
			return bySize[fi.Size()]
		}
	}
	t.Fatal("no two blocks of the same size")
	return nil
}

// wantRefused runs shoal args and fails t unless it exits non-zero with
// want in its output.
func wantRefused(t *testing.T, want string, args ...string) {
	t.Helper()
	res := testutil.RunTimeout(t, 30*time.Second, args...) // a mount that wrongly succeeds stays up: bounded
	if res.Code == 0 || !strings.Contains(res.Stdout+res.Stderr, want) {
		t.Errorf("shoal %s: exit %d, want a failure saying %q\nstdout: %s\nstderr: %s",
			strings.Join(args, " "), res.Code, want, res.Stdout, res.Stderr)
	}
}

// TestEncryptedCompressedVolume: with --encrypt and --compress zstd, each
// block is compressed and then sealed. Text (which compresses) and random
// data (stored raw inside the seal) read back whole and by range; no
// object holds the text; the sealed blocks of the text are much smaller
// than the text (compression ran on plaintext, before the cipher); the
// volume is format version 3; fsck verifies every block.
func TestEncryptedCompressedVolume(t *testing.T) {
	testutil.RequireFUSE(t)
	v := testutil.NewUnformatted(t, "")
	pass := filepath.Join(v.Dir, "pass")
	ok(t, os.WriteFile(pass, []byte("correct horse battery staple\n"), 0o600), "write passphrase")
	testutil.MustRun(t, "format", v.MetaURL, "--name", "both", "--storage", "file", "--bucket", v.Bucket,
		"--encrypt", "--passphrase-file", pass, "--compress", "zstd")
	text := bytes.Repeat([]byte(marker+" and some log text that repeats\n"), (8<<20)/(len(marker)+31))
	random := randBytes(77, 5<<20)
	m := v.Mount(t, "--passphrase-file", pass)
	writeFile(t, m.Path("text"), text, 0o644)
	writeFile(t, m.Path("random"), random, 0o644)
	m.Unmount(t)

	checkBucketSealed(t, v)
	var stored int64
	for _, p := range v.BlockObjects(t) {
		st, err := os.Stat(filepath.Join(v.Bucket, p))
		ok(t, err, "stat object")
		stored += st.Size()
	}
	if want := int64(len(random)) + int64(len(text))/2; stored > want {
		t.Errorf("the bucket holds %d bytes of blocks for %d of text and %d random: the text was not compressed before sealing", stored, len(text), len(random))
	}
	m = v.Mount(t, "--passphrase-file", pass)
	wantContent(t, m.Path("text"), text)
	readRanges(t, m.Path("random"), random)
	readRanges(t, m.Path("text"), text)
	m.Unmount(t)
	out := testutil.MustRun(t, "status", "--json", v.MetaURL).Stdout
	if !strings.Contains(out, `"version": 3`) {
		t.Errorf("an encrypted, compressed volume is not format version 3:\n%s", out)
	}
	testutil.MustRun(t, "fsck", v.MetaURL, "--passphrase-file", pass)
}
