package metatest

import (
	"syscall"
	"testing"
	"time"

	"shoal/internal/meta"
)

var (
	alice = meta.Cred{Uid: 1000, Gid: 1000}
	bob   = meta.Cred{Uid: 1001, Gid: 1001, Groups: []uint32{1000}}
	carol = meta.Cred{Uid: 1002, Gid: 1002}
)

// chown makes ino owned by c, as root.
func (v *env) chown(ino meta.Ino, c meta.Cred, mode uint16) {
	v.t.Helper()
	_, err := v.e.Setattr(v.ctx, ino, meta.SetattrRequest{Valid: meta.SetUid | meta.SetGid | meta.SetMode, Uid: c.Uid, Gid: c.Gid, Mode: mode})
	v.check(err, "chown")
}

func testPermissions(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	priv := v.dir(meta.RootIno, "priv")
	v.chown(priv.Ino, alice, 0o750)
	tmp := v.dir(meta.RootIno, "tmp")
	v.chown(tmp.Ino, bob, 0o1777)
	ca, cb, cc := v.as(alice), v.as(bob), v.as(carol)

	_, err := v.e.Mknod(cc, meta.MknodRequest{Parent: priv.Ino, Name: "x", Type: meta.TypeFile, Mode: 0o644})
	v.wantErrno(err, syscall.EACCES, "create without search permission")
	_, err = v.e.Mknod(cb, meta.MknodRequest{Parent: priv.Ino, Name: "x", Type: meta.TypeFile, Mode: 0o644})
	v.wantErrno(err, syscall.EACCES, "create without write permission")
	own := v.mkAs(ca, priv.Ino, "mine", meta.TypeFile, 0o640)
	if own.Attr.Uid != alice.Uid || own.Attr.Gid != alice.Gid {
		t.Fatalf("new file owned by %d:%d", own.Attr.Uid, own.Attr.Gid)
	}
	_, err = v.e.Lookup(cc, priv.Ino, "mine")
	v.wantErrno(err, syscall.EACCES, "lookup without search permission")
	_, err = v.e.Lookup(cb, priv.Ino, "mine")
	v.check(err, "lookup as group member")
	_, err = v.e.Unlink(cb, priv.Ino, "mine")
	v.wantErrno(err, syscall.EACCES, "unlink without write permission")
	_, err = v.e.Unlink(cb, priv.Ino, "nope")
	v.wantErrno(err, syscall.ENOENT, "unlink of a missing name without write permission")
	_, err = v.e.Rename(cb, meta.RenameRequest{OldParent: priv.Ino, OldName: "nope", NewParent: priv.Ino, NewName: "x"})
	v.wantErrno(err, syscall.ENOENT, "rename of a missing name without write permission")
	_, err = v.e.Rename(cb, meta.RenameRequest{OldParent: priv.Ino, OldName: "mine", NewParent: priv.Ino, NewName: "x"})
	v.wantErrno(err, syscall.EACCES, "rename without write permission")
	v.wantErrno(v.e.Rmdir(cc, meta.RootIno, "priv"), syscall.EACCES, "rmdir in root as non-root")

	v.wantErrno(v.e.Access(cb, own.Ino, meta.MayRead), 0, "group read")
	v.wantErrno(v.e.Access(cb, own.Ino, meta.MayWrite), syscall.EACCES, "group write")
	v.wantErrno(v.e.Access(ca, own.Ino, meta.MayRead|meta.MayWrite), 0, "owner rw")
	v.wantErrno(v.e.Access(ca, own.Ino, meta.MayExec), syscall.EACCES, "owner exec")
	v.wantErrno(v.e.Access(v.ctx, own.Ino, meta.MayExec), syscall.EACCES, "root exec without x bits")
	v.wantErrno(v.e.Access(v.ctx, own.Ino, meta.MayRead|meta.MayWrite), 0, "root rw")
	v.wantErrno(v.e.Access(cc, 9999999, meta.MayRead), syscall.ENOENT, "access missing")

	// Sticky directory: only the entry's owner, the dir's owner or root.
	v.mkAs(ca, tmp.Ino, "a", meta.TypeFile, 0o666)
	v.mkAs(ca, tmp.Ino, "a2", meta.TypeFile, 0o666)
	v.mkAs(cc, tmp.Ino, "c", meta.TypeFile, 0o666)
	_, err = v.e.Unlink(cc, tmp.Ino, "a")
	v.wantErrno(err, syscall.EPERM, "unlink another's file in sticky dir")
	_, err = v.e.Rename(cc, meta.RenameRequest{OldParent: tmp.Ino, OldName: "a", NewParent: tmp.Ino, NewName: "z"})
	v.wantErrno(err, syscall.EPERM, "rename another's file in sticky dir")
	_, err = v.e.Rename(cc, meta.RenameRequest{OldParent: tmp.Ino, OldName: "c", NewParent: tmp.Ino, NewName: "a"})
	v.wantErrno(err, syscall.EPERM, "rename over another's file in sticky dir")
	_, err = v.e.Unlink(ca, tmp.Ino, "a")
	v.check(err, "unlink own file in sticky dir")
	_, err = v.e.Unlink(cb, tmp.Ino, "c")
	v.check(err, "dir owner unlinks in sticky dir")
	_, err = v.e.Unlink(v.ctx, tmp.Ino, "a2")
	v.check(err, "root unlinks in sticky dir")

	// setgid directories pass their group (and, to subdirectories, the bit).
	sg := v.dir(meta.RootIno, "sg")
	v.chown(sg.Ino, meta.Cred{Uid: 0, Gid: 777}, 0o2777)
	f := v.mkAs(ca, sg.Ino, "f", meta.TypeFile, 0o2755)
	if f.Attr.Gid != 777 || f.Attr.Mode != 0o755 {
		t.Fatalf("file in setgid dir: gid %d mode %o", f.Attr.Gid, f.Attr.Mode)
	}
	d := v.mkAs(ca, sg.Ino, "d", meta.TypeDir, 0o755)
	if d.Attr.Gid != 777 || d.Attr.Mode != 0o2755 {
		t.Fatalf("dir in setgid dir: gid %d mode %o", d.Attr.Gid, d.Attr.Mode)
	}

	// Trusted credentials skip checks but still own what they create.
	trusted := v.as(meta.Cred{Uid: 1002, Gid: 1002, Trusted: true})
	ent, err := v.e.Mknod(trusted, meta.MknodRequest{Parent: priv.Ino, Name: "t", Type: meta.TypeFile, Mode: 0o600})
	v.check(err, "trusted create")
	if ent.Attr.Uid != 1002 {
		t.Fatalf("trusted create owned by %d", ent.Attr.Uid)
	}
}

func testSetattr(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	f := v.file(meta.RootIno, "f")
	v.chown(f.Ino, alice, 0o6755)
	ca, cc := v.as(alice), v.as(carol)
	before := v.attr(f.Ino)
	time.Sleep(time.Millisecond)

	a, err := v.e.Setattr(ca, f.Ino, meta.SetattrRequest{Valid: meta.SetMode, Mode: 0o6750})
	v.check(err, "chmod by owner")
	if a.Mode != 0o6750 || a.Ctime <= before.Ctime {
		t.Fatalf("after chmod %+v", a)
	}
	if got := v.attr(f.Ino); got != a {
		t.Fatalf("Setattr returned %+v, Getattr %+v", a, got)
	}
	_, err = v.e.Setattr(cc, f.Ino, meta.SetattrRequest{Valid: meta.SetMode, Mode: 0o777})
	v.wantErrno(err, syscall.EPERM, "chmod by stranger")
	_, err = v.e.Setattr(ca, f.Ino, meta.SetattrRequest{Valid: meta.SetUid, Uid: carol.Uid})
	v.wantErrno(err, syscall.EPERM, "chown by owner")
	_, err = v.e.Setattr(ca, f.Ino, meta.SetattrRequest{Valid: meta.SetGid, Gid: carol.Gid})
	v.wantErrno(err, syscall.EPERM, "chgrp to a group the owner is not in")
	a, err = v.e.Setattr(v.ctx, f.Ino, meta.SetattrRequest{Valid: meta.SetUid | meta.SetGid, Uid: carol.Uid, Gid: carol.Gid})
	v.check(err, "chown by root")
	if a.Uid != carol.Uid || a.Gid != carol.Gid || a.Mode != 0o750 {
		t.Fatalf("after chown: %+v (setuid/setgid must be cleared)", a)
	}
	_, err = v.e.Setattr(ca, f.Ino, meta.SetattrRequest{Valid: meta.SetAtime | meta.SetMtime, Atime: 1, Mtime: 2})
	v.wantErrno(err, syscall.EPERM, "explicit utimes by non-owner")
	a, err = v.e.Setattr(cc, f.Ino, meta.SetattrRequest{Valid: meta.SetAtime | meta.SetMtime, Atime: 1e9, Mtime: 2e9})
	v.check(err, "explicit utimes by owner")
	if a.Atime != 1e9 || a.Mtime != 2e9 {
		t.Fatalf("times %d %d", a.Atime, a.Mtime)
	}
	_, err = v.e.Setattr(ca, f.Ino, meta.SetattrRequest{Valid: meta.SetMtimeNow})
	v.wantErrno(err, syscall.EACCES, "utimes now without write access")
	v.chown(f.Ino, carol, 0o666)
	a, err = v.e.Setattr(ca, f.Ino, meta.SetattrRequest{Valid: meta.SetAtimeNow | meta.SetMtimeNow})
	v.check(err, "utimes now with write access")
	if a.Mtime < before.Mtime || a.Atime < before.Mtime {
		t.Fatalf("utimes now: %+v", a)
	}
	_, err = v.e.Setattr(v.ctx, 9999999, meta.SetattrRequest{Valid: meta.SetMode})
	v.wantErrno(err, syscall.ENOENT, "setattr missing")
}
