package backup

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// node is what tree records of one path.
type node struct {
	mode, uid, gid, nlink uint32
	size                  int64
	mtime                 int64
	target, hash, xattrs  string
}

// tree records every path under dir (the root's times left out).
func tree(t *testing.T, dir string) map[string]node {
	out := map[string]node{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if rel == ".snapshots" {
			return filepath.SkipDir
		}
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			return err
		}
		n := node{mode: st.Mode, uid: st.Uid, gid: st.Gid, nlink: uint32(st.Nlink), size: st.Size, mtime: st.Mtim.Nano()}
		if rel == "." {
			n.mtime, n.nlink = 0, 0
		}
		switch {
		case d.Type()&os.ModeSymlink != 0:
			n.target, _ = os.Readlink(path)
		case d.Type().IsRegular():
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			n.hash = fmt.Sprintf("%x", sha256.Sum256(b))
		}
		buf := make([]byte, 4096)
		if k, err := unix.Llistxattr(path, buf); err == nil {
			names := strings.Split(strings.TrimRight(string(buf[:k]), "\x00"), "\x00")
			sort.Strings(names)
			for _, name := range names {
				v := make([]byte, 4096)
				if vn, err := unix.Lgetxattr(path, name, v); err == nil {
					n.xattrs += fmt.Sprintf("%s=%q;", name, v[:vn])
				}
			}
		}
		out[rel] = n
		return nil
	})
	must(t, err)
	return out
}

func compareTrees(t *testing.T, want, got map[string]node) {
	t.Helper()
	for rel, w := range want {
		if g, ok := got[rel]; !ok {
			t.Errorf("%s: missing after restore", rel)
		} else if g != w {
			t.Errorf("%s differs after restore:\n got  %+v\n want %+v", rel, g, w)
		}
	}
	for rel := range got {
		if _, ok := want[rel]; !ok {
			t.Errorf("%s: appeared after restore", rel)
		}
	}
	t.Logf("%d entries compared", len(want))
}

// withoutWriter is tree without the writer's files (w/...).
func withoutWriter(tr map[string]node) map[string]node {
	out := map[string]node{}
	for rel, n := range tr {
		if !strings.HasPrefix(rel, "w/") {
			out[rel] = n
		}
	}
	return out
}

// blockFiles lists dest's block objects: relative path → modification time.
func blockFiles(t *testing.T, dest string) map[string]time.Time {
	out := map[string]time.Time{}
	err := filepath.WalkDir(filepath.Join(dest, "chunks"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dest, p)
			out[rel] = fi.ModTime()
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}
