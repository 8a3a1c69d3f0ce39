package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestMissingBlock deletes one block object of a file and truncates one of
// another: reads of those files fail with EIO, the log names the inode,
// offset and object, and the mount keeps serving other files.
func TestMissingBlock(t *testing.T) {
	m := mountFresh(t)
	const size = 5 << 20 // block 0 is 4 MiB, block 1 is 1 MiB at offset 4 MiB
	objs := func() []string { return m.Vol.BlockObjects(t) }
	writeObjs := func(name string, seed uint64) ([]byte, []string) {
		before := objs()
		data := randBytes(seed, size)
		writeFile(t, m.Path(name), data, 0o644)
		var added []string
		for _, k := range objs() {
			if !slices.Contains(before, k) {
				added = append(added, k)
			}
		}
		if len(added) == 0 {
			t.Fatalf("writing %s added no object to the bucket", name)
		}
		return data, added
	}
	_, objsA := writeObjs("a", 71)
	_, objsB := writeObjs("b", 72)
	dataC, _ := writeObjs("c", 73)
	inoA, inoB := stat(t, m.Path("a")).Ino, stat(t, m.Path("b")).Ino
	m.Unmount(t)

	lostA := smallest(t, m.Vol.Bucket, objsA) // block 1, at file offset 4 MiB
	ok(t, os.Remove(filepath.Join(m.Vol.Bucket, lostA)), "delete object")
	cutB := smallest(t, m.Vol.Bucket, objsB)
	ok(t, os.Truncate(filepath.Join(m.Vol.Bucket, cutB), 1000), "truncate object")

	m = m.Vol.Mount(t, "--allow-other")
	for _, c := range []struct {
		name string
		ino  uint64
		key  string
	}{{"a", inoA, lostA}, {"b", inoB, cutB}} {
		_, err := os.ReadFile(m.Path(c.name))
		if !errors.Is(err, syscall.EIO) {
			t.Errorf("read %s with a damaged object: %v, want EIO", c.name, err)
		}
		// The intact first block still reads.
		f, err := os.Open(m.Path(c.name))
		ok(t, err, "open")
		_, err = f.ReadAt(make([]byte, 4096), 0)
		f.Close()
		if err != nil {
			t.Errorf("read of %s's intact first block: %v", c.name, err)
		}
		wantLogMentions(t, m.LogText(), c.name, strconv.FormatUint(c.ino, 10), filepath.Base(c.key), strconv.Itoa(4<<20))
	}
	wantContent(t, m.Path("c"), dataC)
	writeFile(t, m.Path("d"), []byte("new file"), 0o644)
	wantContent(t, m.Path("d"), []byte("new file"))
}

// smallest returns the smallest object file among keys.
func smallest(t *testing.T, bucket string, keys []string) string {
	t.Helper()
	best, bestSize := "", int64(-1)
	for _, k := range keys {
		fi, err := os.Stat(filepath.Join(bucket, k))
		ok(t, err, "stat object")
		if bestSize < 0 || fi.Size() < bestSize {
			best, bestSize = k, fi.Size()
		}
	}
	return best
}

// wantLogMentions fails t unless one line of log names all of subs
// (numbers only as whole numbers: inode 2 is not found in "12").
func wantLogMentions(t *testing.T, log, what string, subs ...string) {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		all := true
		for _, s := range subs {
			all = all && mentions(line, s)
		}
		if all {
			t.Logf("%s: %s", what, line)
			return
		}
	}
	t.Errorf("read error on %s: no log line names inode, offset and object %v; log:\n%s", what, subs, log)
}

// mentions reports whether line contains s, as a whole number if s is one.
func mentions(line, s string) bool {
	if _, err := strconv.ParseUint(s, 10, 64); err != nil {
		return strings.Contains(line, s)
	}
	return regexp.MustCompile(`(^|[^0-9])` + s + `([^0-9]|$)`).MatchString(line)
}
