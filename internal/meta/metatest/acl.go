package metatest

import (
	"bytes"
	"syscall"
	"testing"
	"time"

	"shoal/internal/meta"
)

// aclOf builds an ACL: owner, optional named user uid, owning group, mask
// (when there is a named user) and other.
func aclOf(owner, group, other uint16, uid uint32, userPerm, mask uint16) meta.ACL {
	acl := meta.ACL{{Tag: meta.ACLUserObj, Perm: owner}}
	if uid != 0 {
		acl = append(acl, meta.ACLEntry{Tag: meta.ACLUser, Perm: userPerm, ID: uid})
	}
	acl = append(acl, meta.ACLEntry{Tag: meta.ACLGroupObj, Perm: group})
	if uid != 0 {
		acl = append(acl, meta.ACLEntry{Tag: meta.ACLMask, Perm: mask})
	}
	return append(acl, meta.ACLEntry{Tag: meta.ACLOther, Perm: other})
}

// wantACL checks ino's stored ACL name (nil: none).
func (v *env) wantACL(ino meta.Ino, name string, want meta.ACL, what string) {
	v.t.Helper()
	got, err := v.e.Getxattr(v.ctx, ino, name)
	if want == nil {
		v.wantErrno(err, syscall.ENODATA, what)
		return
	}
	v.check(err, what)
	if !bytes.Equal(got, want.Encode()) {
		acl, _ := meta.DecodeACL(got)
		v.t.Fatalf("%s: %s = %v, want %v", what, name, acl, want)
	}
}

// wantMode checks ino's permission bits.
func (v *env) wantMode(ino meta.Ino, want uint16, what string) {
	v.t.Helper()
	if got := v.attr(ino).Mode; got != want {
		v.t.Fatalf("%s: mode %o, want %o", what, got, want)
	}
}

// testACL: the access ACL and the mode are one thing seen two ways, and
// the ACL is enforced for untrusted callers.
func testACL(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	f := v.file(meta.RootIno, "f")
	v.chown(f.Ino, alice, 0o644)
	ca, cc := v.as(alice), v.as(carol)
	before := v.attr(f.Ino)
	time.Sleep(time.Millisecond)

	// u::rw-,u:carol:rw-,g::r--,m::r--,o::--- : the mask is the group bits.
	acl := aclOf(6, 4, 0, carol.Uid, 6, 4)
	v.check(v.e.Setxattr(ca, f.Ino, meta.XattrACLAccess, acl.Encode(), 0), "owner sets the access ACL")
	v.wantMode(f.Ino, 0o640, "after setting the access ACL")
	if v.attr(f.Ino).Ctime <= before.Ctime {
		t.Fatal("setting the access ACL left ctime")
	}
	v.wantACL(f.Ino, meta.XattrACLAccess, acl, "getxattr")
	v.wantErrno(v.e.Access(cc, f.Ino, meta.MayRead), 0, "named user reads")
	v.wantErrno(v.e.Access(cc, f.Ino, meta.MayWrite), syscall.EACCES, "named user writes past the mask")
	v.wantErrno(v.e.Access(v.as(meta.Cred{Uid: 7, Gid: 7}), f.Ino, meta.MayRead), syscall.EACCES, "other reads")

	// chmod rewrites owner, mask and other; the named entry stays.
	_, err := v.e.Setattr(ca, f.Ino, meta.SetattrRequest{Valid: meta.SetMode, Mode: 0o604})
	v.check(err, "chmod")
	v.wantACL(f.Ino, meta.XattrACLAccess, aclOf(6, 4, 4, carol.Uid, 6, 0), "after chmod 604")
	v.wantErrno(v.e.Access(cc, f.Ino, meta.MayRead), syscall.EACCES, "named user under an empty mask")

	// An ACL the mode says in full is not kept.
	v.check(v.e.Setxattr(ca, f.Ino, meta.XattrACLAccess, aclOf(7, 5, 1, 0, 0, 0).Encode(), 0), "minimal ACL")
	v.wantMode(f.Ino, 0o751, "after a minimal ACL")
	v.wantACL(f.Ino, meta.XattrACLAccess, nil, "a minimal ACL is the mode")

	v.wantErrno(v.e.Setxattr(ca, f.Ino, meta.XattrACLAccess, []byte{2, 0, 0, 0, 1}, 0), syscall.EINVAL, "malformed ACL")
	v.wantErrno(v.e.Setxattr(cc, f.Ino, meta.XattrACLAccess, acl.Encode(), 0), syscall.EPERM, "non-owner sets an ACL")
	v.wantErrno(v.e.Setxattr(ca, f.Ino, meta.XattrACLDefault, acl.Encode(), 0), syscall.EACCES, "default ACL on a file")

	// Setting the ACL as a stranger to the file's group drops setgid.
	v.chown(f.Ino, meta.Cred{Uid: alice.Uid, Gid: 4242}, 0o755)
	_, err = v.e.Setattr(v.ctx, f.Ino, meta.SetattrRequest{Valid: meta.SetMode, Mode: 0o2755})
	v.check(err, "chmod g+s")
	v.check(v.e.Setxattr(ca, f.Ino, meta.XattrACLAccess, acl.Encode(), 0), "ACL on a setgid file")
	v.wantMode(f.Ino, 0o640, "setgid dropped")
}

// testACLInherit: a directory's default ACL replaces the umask and becomes
// the access ACL (and, for directories, the default ACL) of what is
// created in it.
func testACLInherit(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	d := v.dir(meta.RootIno, "d")
	v.chown(d.Ino, alice, 0o777)
	ca := v.as(meta.Cred{Uid: alice.Uid, Gid: alice.Gid, Umask: 0o077})

	plain := v.mkAs(ca, d.Ino, "plain", meta.TypeFile, 0o666)
	if plain.Attr.Mode != 0o600 {
		t.Fatalf("umask 077 without a default ACL: mode %o, want 600", plain.Attr.Mode)
	}

	def := aclOf(7, 5, 0, carol.Uid, 7, 7)
	v.check(v.e.Setxattr(ca, d.Ino, meta.XattrACLDefault, def.Encode(), 0), "set default ACL")
	v.wantMode(d.Ino, 0o777, "a default ACL leaves the mode")

	f := v.mkAs(ca, d.Ino, "f", meta.TypeFile, 0o666)
	v.wantMode(f.Ino, 0o660, "file under a default ACL (umask ignored)")
	if f.Attr.Mode != 0o660 {
		t.Fatalf("Mknod returned mode %o, want 660", f.Attr.Mode)
	}
	v.wantACL(f.Ino, meta.XattrACLAccess, aclOf(6, 5, 0, carol.Uid, 7, 6), "inherited access ACL")
	v.wantACL(f.Ino, meta.XattrACLDefault, nil, "a file has no default ACL")
	v.wantErrno(v.e.Access(v.as(carol), f.Ino, meta.MayWrite), 0, "named user writes the new file")

	sub := v.mkAs(ca, d.Ino, "sub", meta.TypeDir, 0o750)
	v.wantMode(sub.Ino, 0o750, "directory under a default ACL")
	v.wantACL(sub.Ino, meta.XattrACLAccess, aclOf(7, 5, 0, carol.Uid, 7, 5), "inherited access ACL of a directory")
	v.wantACL(sub.Ino, meta.XattrACLDefault, def, "inherited default ACL")
	deeper := v.mkAs(ca, sub.Ino, "f", meta.TypeFile, 0o640)
	v.wantACL(deeper.Ino, meta.XattrACLAccess, aclOf(6, 5, 0, carol.Uid, 7, 4), "two levels down")

	link := v.mkAs(ca, d.Ino, "l", meta.TypeSymlink, 0o777)
	v.wantACL(link.Ino, meta.XattrACLAccess, nil, "symlinks take no ACL")

	v.check(v.e.Removexattr(ca, d.Ino, meta.XattrACLDefault), "remove default ACL")
	after := v.mkAs(ca, d.Ino, "after", meta.TypeFile, 0o666)
	if after.Attr.Mode != 0o600 {
		t.Fatalf("after removing the default ACL: mode %o, want 600", after.Attr.Mode)
	}
}
