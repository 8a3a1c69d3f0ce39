//go:build linux

package kvmeta_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"shoal/internal/meta"
	"shoal/internal/meta/kv/memkv"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/testutil"
)

// TestLinuxDifferential runs random namespace operations (mkdir, create,
// symlink, link, unlink, rmdir, rename with flags, chmod, chown) by path,
// as root or as one of two users, both on a real directory of the local
// file system and on the engine, and requires the same errno from both and
// the same tree (names, types, modes, owners, link counts) after every
// step. It pins the
// engine's error precedence to Linux's, which the POSIX rules alone leave
// open. Paths stay within three levels of three names; symlinks dangle, so
// following one in the middle of a path is ENOENT on both sides.
func TestLinuxDifferential(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the engine runs as root, so the local file system must too")
	}
	old := unix.Umask(0) // modes are compared: the engine gets them umask-free
	defer unix.Umask(old)
	base := t.TempDir()
	for _, dir := range []string{filepath.Dir(base), base} { // let the users in
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		run++
		root := filepath.Join(base, strconv.Itoa(run))
		if err := os.Mkdir(root, 0o777); err != nil {
			rt.Fatal(err)
		}
		d := &diff{root: root, ctx: context.Background()}
		d.e = kvmeta.New(memkv.New(), kvmeta.Options{})
		defer d.e.Close()
		if err := d.e.Format(d.ctx, meta.Format{Name: "diff"}, false); err != nil {
			rt.Fatal(err)
		}
		if _, err := d.e.Setattr(d.ctx, meta.RootIno, meta.SetattrRequest{Valid: meta.SetMode, Mode: 0o777}); err != nil {
			rt.Fatal(err)
		}
		rt.Repeat(map[string]func(*rapid.T){
			"mkdir":    d.mkdir,
			"create":   d.create,
			"symlink":  d.symlink,
			"link":     d.link,
			"unlink":   d.unlink,
			"rmdir":    d.rmdir,
			"rename":   d.rename,
			"chmod":    d.chmod,
			"chown":    d.chown,
			"utimes":   d.utimes,
			"setxattr": d.setxattr,
			"getxattr": d.getxattr,
			"rmxattr":  d.removexattr,
			"":         d.compare,
		})
	})
}

type diff struct {
	root string
	e    *kvmeta.Engine
	ctx  context.Context
	cred meta.Cred // the caller of the current step
}

// diffCreds are the callers: root, alice, and bob, who is also in alice's
// group.
var diffCreds = []meta.Cred{{}, {Uid: 1000, Gid: 1000}, {Uid: 1001, Gid: 1001, Groups: []uint32{1000}}}

// as draws the step's caller and returns a context for the engine.
func (d *diff) as(rt *rapid.T) context.Context {
	d.cred = diffCreds[rapid.IntRange(0, len(diffCreds)-1).Draw(rt, "cred")]
	return meta.WithCred(d.ctx, d.cred)
}

// sys runs fn on a fresh OS thread whose file-system identity is d.cred.
// The thread is never unlocked, so the runtime discards it afterwards and
// no other goroutine ever runs with the changed identity.
func (d *diff) sys(fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		done <- d.withIdentity(fn)
	}()
	return <-done
}

func (d *diff) withIdentity(fn func() error) error {
	groups := make([]uint32, len(d.cred.Groups)+1)
	copy(groups, d.cred.Groups)
	groups[len(groups)-1] = d.cred.Gid
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(groups)), uintptr(unsafe.Pointer(&groups[0])), 0); e != 0 {
		return e
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETFSGID, uintptr(d.cred.Gid), 0, 0); e != 0 {
		return e
	}
	unix.RawSyscall(unix.SYS_SETFSUID, uintptr(d.cred.Uid), 0, 0)
	return fn()
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
func (d *diff) resolve(ctx context.Context, path string) (meta.Ino, string, error) {
	parts := strings.Split(path, "/")
	dir := meta.RootIno
	for _, name := range parts[:len(parts)-1] {
		ent, err := d.e.Lookup(ctx, dir, name)
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
	// The kernel's walk checks search permission on the directory holding
	// the last component too, before it looks at the other path.
	if err := d.e.Access(ctx, dir, meta.MayExec); err != nil {
		return 0, "", err
	}
	return dir, parts[len(parts)-1], nil
}

func (d *diff) local(path string) string { return filepath.Join(d.root, path) }

// same requires both errors to carry the same errno.
func same(rt *rapid.T, what string, local, engine error) {
	if testutil.Errno(local) != testutil.Errno(engine) {
		rt.Fatalf("%s: linux %v, engine %v", what, local, engine)
	}
}

// mknod runs one create-like op on the engine.
func (d *diff) mknod(ctx context.Context, path string, typ meta.Type, mode uint16) error {
	dir, name, err := d.resolve(ctx, path)
	if err != nil {
		return err
	}
	_, err = d.e.Mknod(ctx, meta.MknodRequest{Parent: dir, Name: name, Type: typ, Mode: mode, Target: "/nonexistent-shoal-target", Exclusive: true})
	return err
}

func drawMode(rt *rapid.T) uint16 {
	return rapid.SampledFrom([]uint16{0o755, 0o700, 0o777, 0o1777, 0o2775, 0o711, 0o644, 0o600, 0o666, 0o555, 0o2755}).Draw(rt, "mode")
}

func (d *diff) mkdir(rt *rapid.T) {
	ctx, p, mode := d.as(rt), drawPath(rt, "path"), drawMode(rt)
	local := d.sys(func() error { return unix.Mkdir(d.local(p), uint32(mode)) })
	same(rt, "mkdir "+p, local, d.mknod(ctx, p, meta.TypeDir, mode&0o1777))
}

func (d *diff) create(rt *rapid.T) {
	ctx, p, mode := d.as(rt), drawPath(rt, "path"), drawMode(rt)
	local := d.sys(func() error {
		fd, err := unix.Open(d.local(p), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, uint32(mode))
		if err == nil {
			unix.Close(fd)
		}
		return err
	})
	same(rt, "create "+p, local, d.mknod(ctx, p, meta.TypeFile, mode))
}

func (d *diff) symlink(rt *rapid.T) {
	ctx, p := d.as(rt), drawPath(rt, "path")
	local := d.sys(func() error { return unix.Symlink("/nonexistent-shoal-target", d.local(p)) })
	same(rt, "symlink "+p, local, d.mknod(ctx, p, meta.TypeSymlink, 0o777))
}

// link runs as root: fs.protected_hardlinks adds rules for other callers
// that are the kernel's policy, not POSIX.
func (d *diff) link(rt *rapid.T) {
	from, to := drawPath(rt, "from"), drawPath(rt, "to")
	d.cred = meta.Cred{}
	local := unix.Linkat(unix.AT_FDCWD, d.local(from), unix.AT_FDCWD, d.local(to), 0)
	engine := func() error {
		dir, name, err := d.resolve(d.ctx, from)
		if err != nil {
			return err
		}
		src, err := d.e.Lookup(d.ctx, dir, name)
		if err != nil {
			return err
		}
		if dir, name, err = d.resolve(d.ctx, to); err != nil {
			return err
		}
		_, err = d.e.Link(d.ctx, src.Ino, dir, name)
		return err
	}()
	same(rt, "link "+from+" "+to, local, engine)
}

func (d *diff) unlink(rt *rapid.T) {
	ctx, p := d.as(rt), drawPath(rt, "path")
	dir, name, err := d.resolve(ctx, p)
	if err == nil {
		var rm meta.Removed
		if rm, err = d.e.Unlink(ctx, dir, name); err == nil && rm.Orphan {
			err = d.e.Purge(ctx, rm.Ino)
		}
	}
	same(rt, "unlink "+p, d.sys(func() error { return unix.Unlink(d.local(p)) }), err)
}

func (d *diff) rmdir(rt *rapid.T) {
	ctx, p := d.as(rt), drawPath(rt, "path")
	dir, name, err := d.resolve(ctx, p)
	if err == nil {
		err = d.e.Rmdir(ctx, dir, name)
	}
	same(rt, "rmdir "+p, d.sys(func() error { return unix.Rmdir(d.local(p)) }), err)
}

func (d *diff) rename(rt *rapid.T) {
	ctx, from, to := d.as(rt), drawPath(rt, "from"), drawPath(rt, "to")
	flags := rapid.SampledFrom([]uint32{0, 0, meta.RenameNoReplace, meta.RenameExchange}).Draw(rt, "flags")
	local := d.sys(func() error {
		return unix.Renameat2(unix.AT_FDCWD, d.local(from), unix.AT_FDCWD, d.local(to), uint(flags))
	})
	engine := func() error {
		od, on, err := d.resolve(ctx, from)
		if err != nil {
			return err
		}
		nd, nn, err := d.resolve(ctx, to)
		if err != nil {
			return err
		}
		rm, err := d.e.Rename(ctx, meta.RenameRequest{OldParent: od, OldName: on, NewParent: nd, NewName: nn, Flags: flags})
		if err == nil && rm.Orphan {
			err = d.e.Purge(ctx, rm.Ino)
		}
		return err
	}()
	same(rt, "rename "+from+" "+to, local, engine)
}

// target resolves path to its inode, following a final symlink (to
// nothing) when follow is set, as chmod(2) does.
func (d *diff) target(ctx context.Context, path string, follow bool) (meta.Ino, error) {
	dir, name, err := d.resolve(ctx, path)
	if err != nil {
		return 0, err
	}
	ent, err := d.e.Lookup(ctx, dir, name)
	if err == nil && follow && ent.Attr.Type == meta.TypeSymlink {
		return 0, syscall.ENOENT
	}
	return ent.Ino, err
}

func (d *diff) chmod(rt *rapid.T) {
	ctx, p, mode := d.as(rt), drawPath(rt, "path"), drawMode(rt)
	local := d.sys(func() error { return unix.Chmod(d.local(p), uint32(mode)) })
	ino, err := d.target(ctx, p, true)
	if err == nil {
		_, err = d.e.Setattr(ctx, ino, meta.SetattrRequest{Valid: meta.SetMode, Mode: mode})
	}
	same(rt, "chmod "+p, local, err)
}

func (d *diff) chown(rt *rapid.T) {
	ctx, p := d.as(rt), drawPath(rt, "path")
	who := diffCreds[rapid.IntRange(0, len(diffCreds)-1).Draw(rt, "owner")]
	gid := rapid.SampledFrom([]uint32{0, 1000, 1001}).Draw(rt, "group")
	local := d.sys(func() error { return unix.Lchown(d.local(p), int(who.Uid), int(gid)) })
	ino, err := d.target(ctx, p, false)
	if err == nil {
		_, err = d.e.Setattr(ctx, ino, meta.SetattrRequest{Valid: meta.SetUid | meta.SetGid, Uid: who.Uid, Gid: gid})
	}
	same(rt, "chown "+p, local, err)
}

func (d *diff) utimes(rt *rapid.T) {
	ctx, p := d.as(rt), drawPath(rt, "path")
	now := rapid.Bool().Draw(rt, "now")
	ts := []unix.Timespec{{Sec: 1, Nsec: 0}, {Sec: 2, Nsec: 0}}
	req := meta.SetattrRequest{Valid: meta.SetAtime | meta.SetMtime, Atime: 1e9, Mtime: 2e9}
	if now {
		ts = []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}
		req = meta.SetattrRequest{Valid: meta.SetAtimeNow | meta.SetMtimeNow}
	}
	local := d.sys(func() error { return unix.UtimesNanoAt(unix.AT_FDCWD, d.local(p), ts, 0) })
	ino, err := d.target(ctx, p, true)
	if err == nil {
		_, err = d.e.Setattr(ctx, ino, req)
	}
	same(rt, fmt.Sprintf("utimes %s now=%v", p, now), local, err)
}

func (d *diff) setxattr(rt *rapid.T) {
	ctx, p := d.as(rt), drawPath(rt, "path")
	name := "user.a"
	if d.cred.Uid == 0 { // setfsuid keeps CAP_SYS_ADMIN: trusted.* only as root
		name = rapid.SampledFrom([]string{"user.a", "trusted.a"}).Draw(rt, "name")
	}
	flags := rapid.SampledFrom([]uint32{0, meta.XattrCreate, meta.XattrReplace}).Draw(rt, "flags")
	local := d.sys(func() error { return unix.Lsetxattr(d.local(p), name, []byte("v"), int(flags)) })
	ino, err := d.target(ctx, p, false)
	if err == nil {
		err = d.e.Setxattr(ctx, ino, name, []byte("v"), flags)
	}
	same(rt, fmt.Sprintf("setxattr %s %s flags %d", p, name, flags), local, err)
}

func (d *diff) getxattr(rt *rapid.T) {
	ctx, p := d.as(rt), drawPath(rt, "path")
	buf := make([]byte, 16)
	local := d.sys(func() error { _, err := unix.Lgetxattr(d.local(p), "user.a", buf); return err })
	ino, err := d.target(ctx, p, false)
	if err == nil {
		_, err = d.e.Getxattr(ctx, ino, "user.a")
	}
	same(rt, "getxattr "+p, local, err)
}

func (d *diff) removexattr(rt *rapid.T) {
	ctx, p := d.as(rt), drawPath(rt, "path")
	local := d.sys(func() error { return unix.Lremovexattr(d.local(p), "user.a") })
	ino, err := d.target(ctx, p, false)
	if err == nil {
		err = d.e.Removexattr(ctx, ino, "user.a")
	}
	same(rt, "removexattr "+p, local, err)
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
	ents, err := d.e.Readdir(d.ctx, dir, "", 0, true)
	if err != nil {
		rt.Fatal(err)
	}
	var out []string
	for _, de := range ents {
		a := de.Attr
		out = append(out, describe(prefix+de.Name, de.Type, a.Mode, a.Uid, a.Gid, a.Nlink))
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
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			return err
		}
		t := meta.TypeFromMode(st.Mode)
		out = append(out, describe(rel, t, uint16(st.Mode&0o7777), st.Uid, st.Gid, uint32(st.Nlink)))
		return nil
	})
	if err != nil {
		rt.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// describe is one line of a tree listing. Symlink modes are not
// compared (Linux shows 0777 whatever was asked).
func describe(path string, t meta.Type, mode uint16, uid, gid, nlink uint32) string {
	if t == meta.TypeSymlink {
		mode = 0o777
	}
	return fmt.Sprintf("%s%s %o %d:%d n%d", path, typeMark(t), mode, uid, gid, nlink)
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
