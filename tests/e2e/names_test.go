package e2e

import (
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOddNames checks that names are bytes: invalid UTF-8, control
// characters, spaces, and names that sort oddly all round-trip through
// create, lookup, readdir, rename and a remount.
func TestOddNames(t *testing.T) {
	m := mountFresh(t)
	names := []string{
		"\xff\xfe\x80",           // invalid UTF-8
		"line\nbreak",            // newline
		"tab\there",              //
		" leading space",         //
		"trailing space ",        //
		"ünïcødé-😀",              // multi-byte UTF-8
		"%s%d\\x00'\"`$(x)",      // format and shell characters
		strings.Repeat("é", 127), // 254 bytes
		"-", "...", ".hidden", "a.b.c",
	}
	for i, n := range names {
		writeFile(t, m.Dir+"/"+n, []byte{byte(i)}, 0o644)
	}
	check := func(dir string) {
		t.Helper()
		ents, err := os.ReadDir(dir)
		ok(t, err, "readdir")
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		want := slices.Clone(names)
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("listing %q, want %q", got, want)
		}
		for i, n := range names {
			wantContent(t, dir+"/"+n, []byte{byte(i)})
		}
	}
	check(m.Dir)
	ok(t, unix.Rename(m.Dir+"/"+names[0], m.Dir+"/\xfe\xff-renamed"), "rename odd name")
	ok(t, unix.Rename(m.Dir+"/\xfe\xff-renamed", m.Dir+"/"+names[0]), "rename back")
	ok(t, unix.Setxattr(m.Dir+"/"+names[0], "user.\xff\x01", []byte("v"), 0), "setxattr odd name")
	m = m.Remount(t)
	check(m.Dir)
	n, err := unix.Getxattr(m.Dir+"/"+names[0], "user.\xff\x01", make([]byte, 8))
	if err != nil || n != 1 {
		t.Errorf("odd xattr name after remount: %d %v", n, err)
	}
}
