package kvmeta

import (
	"fmt"
	"syscall"

	"shoal/internal/meta"
)

// POSIX ACLs are stored as the xattrs system.posix_acl_access and
// system.posix_acl_default, in the kernel's binary form; the rules (mode
// sync, inheritance, the access check) are meta's (meta/acl.go). An inode
// without the flagXattrs flag has no xattrs, so the hot paths (create in a
// plain directory, chmod, permission checks) read no extra key unless the
// inode has some xattr.

// acl reads ino's ACL name (XattrACLAccess or XattrACLDefault): nil if
// there is none. ino's attributes must have been read in this transaction.
func (t *txn) acl(ino meta.Ino, name string) (meta.ACL, error) {
	if t.flags[ino]&flagXattrs == 0 {
		return nil, nil
	}
	raw, err := t.tx.Get(xattrKey(ino, name))
	if err != nil || raw == nil {
		return nil, err
	}
	acl, err := meta.DecodeACL(raw)
	if err != nil {
		return nil, fmt.Errorf("inode %d: stored %s: %w", ino, name, err)
	}
	return acl, nil
}

// putACL stores (or, with acl nil, deletes) ino's ACL name.
func (t *txn) putACL(ino meta.Ino, name string, acl meta.ACL) {
	if acl == nil {
		if t.flags[ino]&flagXattrs != 0 {
			t.tx.Delete(xattrKey(ino, name))
		}
		return
	}
	t.tx.Set(xattrKey(ino, name), acl.Encode())
	t.flags[ino] |= flagXattrs
	t.touch(ino)
}

// access checks that the caller may access inode ino (attributes a) for
// mask, by its access ACL when it has one. Trusted callers and root skip
// the ACL read.
func (t *txn) access(ino meta.Ino, a *meta.Attr, mask uint32) error {
	c := t.cred
	if c.Trusted || c.Uid == 0 || mask == 0 || t.flags[ino]&flagXattrs == 0 {
		return meta.CheckAccess(c, *a, mask)
	}
	acl, err := t.acl(ino, meta.XattrACLAccess)
	if err != nil {
		return err
	}
	return meta.CheckACLAccess(c, *a, acl, mask)
}

// setACL is Setxattr of an ACL name, after the namespace check: the value
// is parsed, the access ACL rewrites the mode (and is stored only while it
// says more than the mode), a default ACL goes on directories only.
func (t *txn) setACL(ino meta.Ino, a *meta.Attr, name string, value []byte, flags uint32) error {
	acl, err := meta.DecodeACL(value)
	if err != nil {
		return err
	}
	if name == meta.XattrACLDefault {
		if a.Type != meta.TypeDir {
			return syscall.EACCES
		}
		t.putACL(ino, name, acl)
		return nil
	}
	if acl != nil {
		a.Mode = acl.Mode(a.Mode)
		if flags&meta.XattrACLKillSgid != 0 || t.killsSgid(a) {
			a.Mode &^= meta.ModeSetgid
		}
		if acl.Minimal() {
			acl = nil
		}
	}
	t.putACL(ino, name, acl)
	t.touch(ino)
	return nil
}

// killsSgid reports whether an untrusted caller setting a's access ACL
// loses its setgid bit: neither root nor in the file's group.
func (t *txn) killsSgid(a *meta.Attr) bool {
	c := t.cred
	return !c.Trusted && c.Uid != 0 && !c.InGroup(a.Gid)
}

// chmodACL carries a mode change of ino into its access ACL, if any.
func (t *txn) chmodACL(ino meta.Ino, a *meta.Attr) error {
	acl, err := t.acl(ino, meta.XattrACLAccess)
	if err != nil || acl == nil {
		return err
	}
	t.putACL(ino, meta.XattrACLAccess, acl.Chmod(a.Mode))
	return nil
}

// inherited is what a new inode takes from its parent's default ACL.
type inherited struct {
	access, def meta.ACL
}

// inherit applies the parent's default ACL (or, without one, the caller's
// umask) to req.Mode, and returns the ACLs the new inode gets.
func (t *txn) inherit(parent meta.Ino, req *meta.MknodRequest) (inherited, error) {
	if req.Type == meta.TypeSymlink {
		return inherited{}, nil
	}
	def, err := t.acl(parent, meta.XattrACLDefault)
	if err != nil {
		return inherited{}, err
	}
	var in inherited
	req.Mode, in.access = meta.Inherit(def, req.Mode, t.cred.Umask)
	if req.Type == meta.TypeDir {
		in.def = def
	}
	return in, nil
}

// put stores the inherited ACLs of new inode ino.
func (in inherited) put(t *txn, ino meta.Ino) {
	if in.access != nil {
		t.putACL(ino, meta.XattrACLAccess, in.access)
	}
	if in.def != nil {
		t.putACL(ino, meta.XattrACLDefault, in.def)
	}
}
