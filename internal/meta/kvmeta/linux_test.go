//go:build linux

package kvmeta_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"shoal/internal/meta"
	"shoal/internal/meta/kv/memkv"
	"shoal/internal/meta/kvmeta"
)

// TestLinuxDifferential runs random namespace operations (mkdir, create,
// symlink, link, unlink, rmdir, rename with flags) by path both on a real
// directory of the local file system and on the engine, and requires the
// same errno from both and the same tree after every step. It pins the
// engine's error precedence to Linux's, which the POSIX rules alone leave
// open. Paths stay within three levels of three names; symlinks dangle, so
// following one in the middle of a path is ENOENT on both sides.
func TestLinuxDifferential(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the engine runs as root, so the local file system must too")
	}
	base := t.TempDir()
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		run++
		root := filepath.Join(base, strconv.Itoa(run))
		if err := os.Mkdir(root, 0o755); err != nil {
			rt.Fatal(err)
		}
		d := &diff{root: root, ctx: context.Background()}
		d.e = kvmeta.New(memkv.New(), kvmeta.Options{})
		defer d.e.Close()
		if err := d.e.Format(d.ctx, meta.Format{Name: "diff"}, false); err != nil {
			rt.Fatal(err)
		}
		rt.Repeat(map[string]func(*rapid.T){
			"mkdir":   d.mkdir,
			"create":  d.create,
			"symlink": d.symlink,
			"link":    d.link,
			"unlink":  d.unlink,
			"rmdir":   d.rmdir,
			"rename":  d.rename,
			"":        d.compare,
		})
	})
}

type diff struct {
	root string
	e    *kvmeta.Engine
	ctx  context.Context
}

var diffPaths = func() []string {
	var out []string
	names := []string{"a", "b", "c"}
	for _, x := range names {
		out = append(out, x)
		for _, y := range names {
			out = append(out, x+"/"+y)
			for _, z := range names {
				out = append(out, x+"/"+y+"/"+z)
			}
		}
	}
	return out
}()

func drawPath(rt *rapid.T, label string) string { return rapid.SampledFrom(diffPaths).Draw(rt, label) }

// resolve walks the engine to path's parent directory: like the kernel, an
// intermediate symlink is followed (to nothing: ENOENT).
func (d *diff) resolve(path string) (meta.Ino, string, error) {
	parts := strings.Split(path, "/")
	dir := meta.RootIno
	for _, name := range parts[:len(parts)-1] {
		ent, err := d.e.Lookup(d.ctx, dir, name)
		if err != nil {
			return 0, "", err
		}
		switch ent.Attr.Type {
		case meta.TypeSymlink:
			return 0, "", syscall.ENOENT
		case meta.TypeDir:
			dir = ent.Ino
		default:
			return 0, "", syscall.ENOTDIR
		}
	}
	return dir, parts[len(parts)-1], nil
}

func (d *diff) local(path string) string { return filepath.Join(d.root, path) }

// same requires both errors to carry the same errno.
func same(rt *rapid.T, what string, local, engine error) {
	if errnoOf(local) != errnoOf(engine) {
		rt.Fatalf("%s: linux %v, engine %v", what, local, engine)
	}
}

func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	if err == nil {
		return 0
	}
	if errors.As(err, &e) {
		return e
	}
	return syscall.Errno(0xffff)
}

// mknod runs one create-like op on the engine.
func (d *diff) mknod(path string, typ meta.Type) error {
	dir, name, err := d.resolve(path)
	if err != nil {
		return err
	}
	_, err = d.e.Mknod(d.ctx, meta.MknodRequest{Parent: dir, Name: name, Type: typ, Mode: 0o755, Target: "/nonexistent-shoal-target", Exclusive: true})
	return err
}

func (d *diff) mkdir(rt *rapid.T) {
	p := drawPath(rt, "path")
	same(rt, "mkdir "+p, unix.Mkdir(d.local(p), 0o755), d.mknod(p, meta.TypeDir))
}

func (d *diff) create(rt *rapid.T) {
	p := drawPath(rt, "path")
	fd, err := unix.Open(d.local(p), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
	if err == nil {
		unix.Close(fd)
	}
	same(rt, "create "+p, err, d.mknod(p, meta.TypeFile))
}

func (d *diff) symlink(rt *rapid.T) {
	p := drawPath(rt, "path")
	same(rt, "symlink "+p, unix.Symlink("/nonexistent-shoal-target", d.local(p)), d.mknod(p, meta.TypeSymlink))
}

func (d *diff) link(rt *rapid.T) {
	from, to := drawPath(rt, "from"), drawPath(rt, "to")
	local := unix.Linkat(unix.AT_FDCWD, d.local(from), unix.AT_FDCWD, d.local(to), 0)
	engine := func() error {
		dir, name, err := d.resolve(from)
		if err != nil {
			return err
		}
		src, err := d.e.Lookup(d.ctx, dir, name)
		if err != nil {
			return err
		}
		if dir, name, err = d.resolve(to); err != nil {
			return err
		}
		_, err = d.e.Link(d.ctx, src.Ino, dir, name)
		return err
	}()
	same(rt, "link "+from+" "+to, local, engine)
}

func (d *diff) unlink(rt *rapid.T) {
	p := drawPath(rt, "path")
	dir, name, err := d.resolve(p)
	if err == nil {
		var rm meta.Removed
		if rm, err = d.e.Unlink(d.ctx, dir, name); err == nil && rm.Orphan {
			err = d.e.Purge(d.ctx, rm.Ino)
		}
	}
	same(rt, "unlink "+p, unix.Unlink(d.local(p)), err)
}

func (d *diff) rmdir(rt *rapid.T) {
	p := drawPath(rt, "path")
	dir, name, err := d.resolve(p)
	if err == nil {
		err = d.e.Rmdir(d.ctx, dir, name)
	}
	same(rt, "rmdir "+p, unix.Rmdir(d.local(p)), err)
}

func (d *diff) rename(rt *rapid.T) {
	from, to := drawPath(rt, "from"), drawPath(rt, "to")
	flags := rapid.SampledFrom([]uint32{0, 0, meta.RenameNoReplace, meta.RenameExchange}).Draw(rt, "flags")
	local := unix.Renameat2(unix.AT_FDCWD, d.local(from), unix.AT_FDCWD, d.local(to), uint(flags))
	engine := func() error {
		od, on, err := d.resolve(from)
		if err != nil {
			return err
		}
		nd, nn, err := d.resolve(to)
		if err != nil {
			return err
		}
		rm, err := d.e.Rename(d.ctx, meta.RenameRequest{OldParent: od, OldName: on, NewParent: nd, NewName: nn, Flags: flags})
		if err == nil && rm.Orphan {
			err = d.e.Purge(d.ctx, rm.Ino)
		}
		return err
	}()
	same(rt, "rename "+from+" "+to, local, engine)
}

// compare lists both trees and requires the same names and types.
func (d *diff) compare(rt *rapid.T) {
	got := d.engineTree(rt, meta.RootIno, "")
	sort.Strings(got)
	want := localTree(rt, d.root)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		rt.Fatalf("trees differ:\nlinux  %v\nengine %v", want, got)
	}
}

func (d *diff) engineTree(rt *rapid.T, dir meta.Ino, prefix string) []string {
	ents, err := d.e.Readdir(d.ctx, dir, "", 0, false)
	if err != nil {
		rt.Fatal(err)
	}
	var out []string
	for _, de := range ents {
		out = append(out, prefix+de.Name+typeMark(de.Type))
		if de.Type == meta.TypeDir {
			out = append(out, d.engineTree(rt, de.Ino, prefix+de.Name+"/")...)
		}
	}
	return out
}

func localTree(rt *rapid.T, root string) []string {
	var out []string
	err := filepath.WalkDir(root, func(path string, de os.DirEntry, err error) error {
		if err != nil || path == root {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		t := meta.TypeFile
		switch {
		case de.IsDir():
			t = meta.TypeDir
		case de.Type()&os.ModeSymlink != 0:
			t = meta.TypeSymlink
		}
		out = append(out, rel+typeMark(t))
		return nil
	})
	if err != nil {
		rt.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func typeMark(t meta.Type) string {
	switch t {
	case meta.TypeDir:
		return "/"
	case meta.TypeSymlink:
		return "@"
	}
	return ""
}
