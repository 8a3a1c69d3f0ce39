package kvmeta

import (
	"context"
	"strings"
	"syscall"

	"shoal/internal/meta"
)

// Extended attributes live under 'X'+ino+name, one key each, so Listxattr is
// one ordered scan of the 9-byte prefix.
//
// Permissions, as Linux: "trusted." names are root's only, "security."
// names need root to set, "system." names (ACLs) the owner or root to set;
// ACL values are parsed and kept in step with the mode (acl.go);
// other names need read or write access to the inode; "user." names exist
// only on regular files and directories (for everyone, root included), and
// on a sticky directory only its owner or root sets them. A denied write
// is EPERM (EACCES from the access check), a denied read ENODATA.

// Getxattr reads one xattr key.
func (e *Engine) Getxattr(ctx context.Context, ino meta.Ino, name string) ([]byte, error) {
	var value []byte
	err := e.view(ctx, func(t *txn) error {
		if err := meta.CheckXattr(name, nil); err != nil {
			return err
		}
		a, err := t.attr(ino)
		if err != nil {
			return err
		}
		if err := t.xattrAccess(ino, a, name, meta.MayRead); err != nil {
			return err
		}
		if t.flags[ino]&flagXattrs == 0 {
			// Never had one: the kernel's ACL fetch (a getxattr of
			// system.posix_acl_access whenever it refreshed an inode's
			// attributes) costs one read.
			return syscall.ENODATA
		}
		value, err = t.tx.Get(xattrKey(ino, name))
		if err == nil && value == nil {
			return syscall.ENODATA
		}
		return err
	})
	return value, wrap(err, "getxattr %d %q", ino, name)
}

// Setxattr writes one xattr key; the inode's ctime changes. The ACL names
// go through setACL, which keeps the mode and the access ACL in step.
func (e *Engine) Setxattr(ctx context.Context, ino meta.Ino, name string, value []byte, flags uint32) error {
	if err := meta.CheckXattr(name, value); err != nil {
		return err
	}
	mode := flags &^ meta.XattrACLKillSgid
	if mode&^(meta.XattrCreate|meta.XattrReplace) != 0 || mode == meta.XattrCreate|meta.XattrReplace {
		return syscall.EINVAL
	}
	err := e.update(ctx, func(t *txn) error {
		a, err := t.attr(ino)
		if err != nil {
			return err
		}
		if err := t.xattrAccess(ino, a, name, meta.MayWrite); err != nil {
			return err
		}
		old, err := t.tx.Get(xattrKey(ino, name))
		switch {
		case err != nil:
			return err
		case old != nil && mode == meta.XattrCreate:
			return syscall.EEXIST
		case old == nil && mode == meta.XattrReplace:
			return syscall.ENODATA
		case isACL(name):
			if err := t.setACL(ino, a, name, value, flags); err != nil {
				return err
			}
		default:
			t.tx.Set(xattrKey(ino, name), value)
			t.flags[ino] |= flagXattrs
		}
		a.Ctime = t.now
		t.touch(ino)
		return nil
	})
	return wrap(err, "setxattr %d %q", ino, name)
}

// Listxattr scans the inode's xattr keys.
func (e *Engine) Listxattr(ctx context.Context, ino meta.Ino) ([]string, error) {
	var names []string
	err := e.view(ctx, func(t *txn) error {
		names = names[:0]
		if _, err := t.attr(ino); err != nil {
			return err
		}
		prefix := inoKey(kindXattr, ino)
		return t.tx.Scan(prefix, nil, 0, func(key, _ []byte) bool {
			names = append(names, string(key[len(prefix):]))
			return true
		})
	})
	return names, wrap(err, "listxattr %d", ino)
}

// Removexattr deletes one xattr key; the inode's ctime changes.
func (e *Engine) Removexattr(ctx context.Context, ino meta.Ino, name string) error {
	if err := meta.CheckXattr(name, nil); err != nil {
		return err
	}
	err := e.update(ctx, func(t *txn) error {
		a, err := t.attr(ino)
		if err != nil {
			return err
		}
		if err := t.xattrAccess(ino, a, name, meta.MayWrite); err != nil {
			return err
		}
		old, err := t.tx.Get(xattrKey(ino, name))
		if err != nil {
			return err
		}
		if old == nil {
			return syscall.ENODATA
		}
		t.tx.Delete(xattrKey(ino, name))
		a.Ctime = t.now
		t.touch(ino)
		return nil
	})
	return wrap(err, "removexattr %d %q", ino, name)
}

// xattrAccess applies the namespace rules above for an access of mask, in
// the order Linux's xattr_permission uses.
func (t *txn) xattrAccess(ino meta.Ino, a *meta.Attr, name string, mask uint32) error {
	c := t.cred
	if c.Trusted {
		return nil
	}
	deny := syscall.ENODATA // an attribute the caller may not see does not exist
	if mask == meta.MayWrite {
		deny = syscall.EPERM
	}
	root, owner := c.Uid == 0, c.Uid == a.Uid
	switch {
	case strings.HasPrefix(name, "security."):
		if mask == meta.MayWrite && !root {
			return deny
		}
		return nil
	case strings.HasPrefix(name, "system."):
		if mask == meta.MayWrite && !root && !owner {
			return deny
		}
		return nil
	case strings.HasPrefix(name, "trusted."):
		if !root {
			return deny
		}
		return nil
	case strings.HasPrefix(name, "user."):
		if a.Type != meta.TypeFile && a.Type != meta.TypeDir {
			return deny
		}
		if mask == meta.MayWrite && a.Type == meta.TypeDir && a.Mode&meta.ModeSticky != 0 && !root && !owner {
			return syscall.EPERM
		}
	}
	return t.access(ino, a, mask)
}

// isACL reports whether name is one of the POSIX ACL xattrs, whose values
// the engine parses (acl.go).
func isACL(name string) bool {
	return name == meta.XattrACLAccess || name == meta.XattrACLDefault
}
