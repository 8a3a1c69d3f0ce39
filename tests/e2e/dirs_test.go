package e2e

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestDirs(t *testing.T) {
	m := mountFresh(t)
	root := stat(t, m.Dir)
	if root.Mode&syscall.S_IFMT != syscall.S_IFDIR || root.Nlink != 2 {
		t.Errorf("fresh root: mode %o nlink %d, want a dir with nlink 2", root.Mode, root.Nlink)
	}
	t.Run("Mkdir", func(t *testing.T) {
		p := m.Path("d")
		ok(t, unix.Mkdir(p, 0o750), "mkdir")
		st := stat(t, p)
		if st.Mode != syscall.S_IFDIR|0o750 || st.Nlink != 2 {
			t.Errorf("new dir: mode %o nlink %d", st.Mode, st.Nlink)
		}
		if got := stat(t, m.Dir).Nlink; got != 3 {
			t.Errorf("root nlink after mkdir = %d, want 3", got)
		}
		wantErrno(t, unix.Mkdir(p, 0o755), syscall.EEXIST, "mkdir existing")
		ok(t, unix.Mkdir(m.Path("d", "sub"), 0o755), "mkdir nested")
		if got := stat(t, p).Nlink; got != 3 {
			t.Errorf("dir nlink with one subdir = %d, want 3", got)
		}
		wantErrno(t, unix.Mkdir(m.Path("nope", "sub"), 0o755), syscall.ENOENT, "mkdir under missing")
	})
	t.Run("Rmdir", func(t *testing.T) {
		p := m.Path("r")
		ok(t, unix.Mkdir(p, 0o755), "mkdir")
		writeFile(t, m.Path("r", "f"), nil, 0o644)
		wantErrno(t, unix.Rmdir(p), syscall.ENOTEMPTY, "rmdir non-empty")
		wantErrno(t, unix.Rmdir(m.Path("r", "f")), syscall.ENOTDIR, "rmdir file")
		ok(t, unix.Unlink(m.Path("r", "f")), "unlink")
		before := stat(t, m.Dir).Nlink
		ok(t, unix.Rmdir(p), "rmdir empty")
		if got := stat(t, m.Dir).Nlink; got != before-1 {
			t.Errorf("root nlink after rmdir = %d, want %d", got, before-1)
		}
		wantErrno(t, unix.Rmdir(p), syscall.ENOENT, "rmdir again")
		var st unix.Stat_t
		wantErrno(t, unix.Stat(p, &st), syscall.ENOENT, "stat removed dir")
	})
	t.Run("RmdirDot", func(t *testing.T) {
		ok(t, unix.Mkdir(m.Path("dot"), 0o755), "mkdir")
		wantErrno(t, unix.Rmdir(m.Path("dot")+"/."), syscall.EINVAL, "rmdir dir/.")
		stat(t, m.Path("dot"))
	})
	t.Run("Readdir", func(t *testing.T) { testReaddir(t, m.Path("many")) })
	t.Run("DotDot", func(t *testing.T) {
		ok(t, os.MkdirAll(m.Path("a", "b"), 0o755), "mkdir -p")
		if stat(t, m.Path("a", "b")+"/..").Ino != stat(t, m.Path("a")).Ino {
			t.Error("a/b/.. is not a")
		}
		if stat(t, m.Path("a")+"/.").Ino != stat(t, m.Path("a")).Ino {
			t.Error("a/. is not a")
		}
	})
}

// testReaddir fills dir with files and subdirectories whose names are long
// enough that listing needs many getdents calls, then checks the listing,
// the entry types, and the listing again after removing every other entry.
func testReaddir(t *testing.T, dir string) {
	ok(t, unix.Mkdir(dir, 0o755), "mkdir")
	want := map[string]bool{} // name -> is dir
	for i := 0; i < 3000; i++ {
		name := fmt.Sprintf("%04d-%s", i, strings.Repeat("x", i%200))
		if i%100 == 0 {
			ok(t, unix.Mkdir(dir+"/"+name, 0o755), "mkdir entry")
			want[name] = true
		} else {
			writeFile(t, dir+"/"+name, nil, 0o644)
			want[name] = false
		}
	}
	checkListing(t, dir, want)
	i := 0
	for _, name := range sortedKeys(want) {
		if i++; i%2 == 0 {
			continue
		}
		if want[name] {
			ok(t, unix.Rmdir(dir+"/"+name), "rmdir entry")
		} else {
			ok(t, unix.Unlink(dir+"/"+name), "unlink entry")
		}
		delete(want, name)
	}
	checkListing(t, dir, want)
}

func checkListing(t *testing.T, dir string, want map[string]bool) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	ok(t, err, "readdir")
	seen := map[string]bool{}
	for _, e := range ents {
		if seen[e.Name()] {
			t.Errorf("readdir returned %q twice", e.Name())
		}
		seen[e.Name()] = true
		isDir, ok := want[e.Name()]
		if !ok {
			t.Errorf("readdir returned unexpected %q", e.Name())
			continue
		}
		if e.IsDir() != isDir {
			t.Errorf("readdir type of %q: dir=%v, want %v", e.Name(), e.IsDir(), isDir)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("readdir returned %d entries, want %d", len(seen), len(want))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestReaddirSeek reads part of a directory, rewinds the handle and lists
// it whole: the rewind must restart the listing, not continue it.
func TestReaddirSeek(t *testing.T) {
	m := mountFresh(t)
	dir := m.Path("d")
	ok(t, unix.Mkdir(dir, 0o755), "mkdir")
	for i := 0; i < 500; i++ {
		writeFile(t, fmt.Sprintf("%s/f%03d", dir, i), nil, 0o644)
	}
	f, err := os.Open(dir)
	ok(t, err, "open dir")
	defer f.Close()
	first, err := f.Readdirnames(100)
	ok(t, err, "readdir first 100")
	_, err = f.Seek(0, 0)
	ok(t, err, "rewinddir")
	all, err := f.Readdirnames(-1)
	ok(t, err, "readdir all")
	if len(all) != 500 {
		t.Errorf("after rewind: %d names, want 500", len(all))
	}
	for _, n := range first {
		if !slices.Contains(all, n) {
			t.Errorf("%q missing after rewind", n)
		}
	}
}

// TestReaddirWhileChanging reads a directory in pieces while entries are
// added and removed between the pieces: POSIX lets the changed names show
// or not, but every unchanged entry must come exactly once.
func TestReaddirWhileChanging(t *testing.T) {
	m := mountFresh(t)
	dir := m.Path("d")
	ok(t, unix.Mkdir(dir, 0o755), "mkdir")
	stable := map[string]bool{}
	for i := 0; i < 1000; i++ {
		name := fmt.Sprintf("m%04d", i)
		writeFile(t, dir+"/"+name, nil, 0o644)
		if i%3 != 0 {
			stable[name] = true
		}
	}
	f, err := os.Open(dir)
	ok(t, err, "open dir")
	defer f.Close()
	seen := map[string]int{}
	for round := 0; ; round++ {
		names, err := f.Readdirnames(100)
		for _, n := range names {
			seen[n]++
		}
		if err != nil || len(names) == 0 {
			break
		}
		// Between pieces: add names that sort before and after the
		// cursor, and remove unstable names (index%3 == 0) ahead of it.
		for k := 0; k < 20; k++ {
			writeFile(t, fmt.Sprintf("%s/a%02d-%02d", dir, round, k), nil, 0o644)
			writeFile(t, fmt.Sprintf("%s/z%02d-%02d", dir, round, k), nil, 0o644)
		}
		for i := (round + 2) * 100; i < (round+3)*100 && i < 1000; i++ {
			if i%3 == 0 {
				ok(t, os.Remove(fmt.Sprintf("%s/m%04d", dir, i)), "unlink ahead")
			}
		}
	}
	for n := range stable {
		if seen[n] != 1 {
			t.Errorf("unchanged entry %q listed %d times", n, seen[n])
		}
	}
	for n, c := range seen {
		if c > 1 {
			t.Errorf("%q listed %d times", n, c)
		}
	}
}
