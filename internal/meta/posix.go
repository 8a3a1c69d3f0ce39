package meta

import (
	"strings"
	"syscall"
)

// This file holds the POSIX rules that do not depend on an engine. They are
// pure functions over plain structs; an engine calls them inside its
// transaction with the attributes it has read, so every engine applies the
// same rules. With Cred.Trusted (the kernel already checked, as with a FUSE
// mount using default_permissions) every permission rule is skipped; only
// the ownership of new inodes (NewOwner) still applies.

// Access mask bits, as access(2) R_OK, W_OK and X_OK.
const (
	MayExec  uint32 = 1
	MayWrite uint32 = 2
	MayRead  uint32 = 4
)

// Special mode bits.
const (
	ModeSetuid uint16 = 0o4000
	ModeSetgid uint16 = 0o2000
	ModeSticky uint16 = 0o1000
	modeGroupX uint16 = 0o010
)

// xattr flags, as setxattr(2).
const (
	XattrCreate  uint32 = 1
	XattrReplace uint32 = 2
	// XattrACLKillSgid: setting the access ACL clears the setgid bit (the
	// caller is neither in the file's group nor privileged; FUSE's
	// FUSE_SETXATTR_ACL_KILL_SGID).
	XattrACLKillSgid uint32 = 1 << 16
)

// MaxXattrName is the longest extended attribute name, as on Linux.
const MaxXattrName = 255

// CheckName validates a directory entry name: EINVAL for "", ".", "..", a
// name holding '/' or NUL; ENAMETOOLONG past MaxNameLen bytes.
func CheckName(name string) error {
	switch {
	case len(name) > MaxNameLen:
		return syscall.ENAMETOOLONG
	case name == "", name == ".", name == "..":
		return syscall.EINVAL
	case strings.ContainsAny(name, "/\x00"):
		return syscall.EINVAL
	}
	return nil
}

// CheckAccess reports whether c may access an inode with attributes a for
// mask (MayRead|MayWrite|MayExec): nil or EACCES. The owner bits apply to the
// owner, the group bits to members of the group (primary or supplementary),
// the other bits to the rest. Root passes, except that executing a
// non-directory needs at least one x bit.
func CheckAccess(c Cred, a Attr, mask uint32) error {
	if c.Trusted || mask == 0 {
		return nil
	}
	if c.Uid == 0 {
		if mask&MayExec != 0 && a.Type != TypeDir && a.Mode&0o111 == 0 {
			return syscall.EACCES
		}
		return nil
	}
	var bits uint32
	switch {
	case c.Uid == a.Uid:
		bits = uint32(a.Mode>>6) & 7
	case c.InGroup(a.Gid):
		bits = uint32(a.Mode>>3) & 7
	default:
		bits = uint32(a.Mode) & 7
	}
	if mask&^bits != 0 {
		return syscall.EACCES
	}
	return nil
}

// CheckSticky applies the sticky-directory rule to removing or renaming
// victim out of dir: in a sticky directory only the owner of the entry, the
// owner of the directory or root may do so. EPERM otherwise.
func CheckSticky(c Cred, dir, victim Attr) error {
	if c.Trusted || c.Uid == 0 || dir.Mode&ModeSticky == 0 {
		return nil
	}
	if c.Uid == dir.Uid || c.Uid == victim.Uid {
		return nil
	}
	return syscall.EPERM
}

// NewOwner returns the owner, group and mode of an inode of type t that c
// creates in parent with permission bits mode. A setgid parent passes its
// group down, and to a subdirectory its setgid bit too. A non-directory's
// setgid bit is dropped when c is not root and not in the new group.
func NewOwner(c Cred, parent Attr, t Type, mode uint16) (uid, gid uint32, m uint16) {
	uid, gid, m = c.Uid, c.Gid, mode&0o7777
	if parent.Mode&ModeSetgid != 0 {
		gid = parent.Gid
		if t == TypeDir {
			m |= ModeSetgid
		}
	}
	if t != TypeDir && m&ModeSetgid != 0 && c.Uid != 0 && !c.InGroup(gid) {
		m &^= ModeSetgid
	}
	return uid, gid, m
}

// KillSuidgid returns the mode a keeps after a write, truncate or change
// of owner by c that must drop privileges (Linux's rules): setuid goes,
// and setgid where group exec is set or c is not in the file's group
// (only c's primary group is known here: a member through a
// supplementary group loses it too). A directory keeps both.
func KillSuidgid(c Cred, a Attr) uint16 {
	m := a.Mode
	if a.Type == TypeDir {
		return m
	}
	m &^= ModeSetuid
	if m&modeGroupX != 0 || (c.Uid != 0 && !c.InGroup(a.Gid)) {
		m &^= ModeSetgid
	}
	return m
}

// ApplySetattr returns a with req applied by c at time now (ns), or EPERM /
// EACCES when c may not make the change. Rules, as Linux:
//   - chmod: owner or root; a non-root caller not in the file's group loses
//     the setgid bit.
//   - chown: only root changes the owner (the owner may "change" it to
//     itself); chgrp: root, or the owner to a group it is in.
//   - a change of owner or group clears setuid, and setgid when group-exec
//     is set, on non-directories.
//   - SetKillSuidgid applies KillSuidgid (the kernel asks for it with a
//     truncate or change of owner that drops privileges).
//   - times: explicit values need the owner or root; "now" needs the owner,
//     root or write access.
//
// ctime becomes now whenever anything is requested.
func ApplySetattr(c Cred, a Attr, req SetattrRequest, now int64) (Attr, error) {
	if err := checkSetattr(c, a, req); err != nil {
		return a, err
	}
	v := req.Valid
	if v&SetMode != 0 {
		a.Mode = req.Mode & 0o7777
		if !c.Trusted && c.Uid != 0 && !c.InGroup(a.Gid) {
			a.Mode &^= ModeSetgid
		}
	}
	if v&(SetUid|SetGid) != 0 {
		if v&SetUid != 0 {
			a.Uid = req.Uid
		}
		if v&SetGid != 0 {
			a.Gid = req.Gid
		}
		if !c.Trusted && a.Type != TypeDir {
			a.Mode &^= ModeSetuid
			if a.Mode&modeGroupX != 0 {
				a.Mode &^= ModeSetgid
			}
		}
	}
	if v&SetKillSuidgid != 0 {
		a.Mode = KillSuidgid(c, a)
	}
	a.Atime = pickTime(v, SetAtimeNow, SetAtime, req.Atime, now, a.Atime)
	a.Mtime = pickTime(v, SetMtimeNow, SetMtime, req.Mtime, now, a.Mtime)
	if v != 0 {
		a.Ctime = now
	}
	return a, nil
}

func pickTime(v, nowBit, setBit SetattrMask, value, now, old int64) int64 {
	switch {
	case v&nowBit != 0:
		return now
	case v&setBit != 0:
		return value
	}
	return old
}

// checkSetattr holds the permission half of ApplySetattr.
func checkSetattr(c Cred, a Attr, req SetattrRequest) error {
	if c.Trusted || c.Uid == 0 {
		return nil
	}
	v, owner := req.Valid, c.Uid == a.Uid
	if v&SetMode != 0 && !owner {
		return syscall.EPERM
	}
	if v&SetUid != 0 && (!owner || req.Uid != a.Uid) {
		return syscall.EPERM
	}
	if v&SetGid != 0 && (!owner || (req.Gid != a.Gid && !c.InGroup(req.Gid))) {
		return syscall.EPERM
	}
	if v&(SetAtime|SetMtime) != 0 && !owner {
		return syscall.EPERM
	}
	if v&(SetAtimeNow|SetMtimeNow) != 0 && !owner {
		return CheckAccess(c, a, MayWrite)
	}
	return nil
}

// RenameCheck is what CheckRename needs to know about a rename.
type RenameCheck struct {
	Flags uint32
	Cred  Cred
	// SrcDir and DstDir are the old and new parent directories;
	// SameParent says they are one.
	SrcDir, DstDir Attr
	SameParent     bool
	Src            Attr  // the entry being moved
	Dst            *Attr // the entry it replaces (or exchanges with); nil if none
	// DstEmpty says the Dst directory has no entries.
	DstEmpty bool
	// IntoOwnSubtree says the source is a directory that is the new
	// parent or one of its ancestors: it would land inside itself.
	IntoOwnSubtree bool
	// DstIsAncestor says the target is a directory that is the old parent
	// or one of its ancestors (rename("a/b/c", "a") and the like).
	DstIsAncestor bool
}

// CheckRename applies rename(2) and renameat2(2) rules, in Linux's order
// of precedence (the caller has found the source and checked that the
// source and target are not one inode):
//   - EINVAL for bad flags; ENOENT for RENAME_EXCHANGE without a target;
//     EEXIST for RENAME_NOREPLACE onto an entry;
//   - EINVAL for a move into the own subtree; ENOTEMPTY (EINVAL for an
//     exchange) onto an ancestor of the source;
//   - removing the source: EACCES without write and search permission on
//     its directory, EPERM by the sticky rule;
//   - the target: as for the source when there is one, then ENOTDIR
//     (directory onto non-directory) or EISDIR (non-directory onto
//     directory); EACCES when there is none and the new directory is not
//     writable;
//   - EACCES when a directory changing parent is not writable (its ".."
//     changes);
//   - ENOTEMPTY onto a non-empty directory.
func CheckRename(r RenameCheck) error {
	if err := checkRenameShape(r); err != nil {
		return err
	}
	exchange := r.Flags&RenameExchange != 0
	if err := mayDelete(r.Cred, r.SrcDir, r.Src); err != nil {
		return err
	}
	if err := checkRenameTarget(r, exchange); err != nil {
		return err
	}
	if !r.SameParent {
		if r.Src.Type == TypeDir {
			if err := CheckAccess(r.Cred, r.Src, MayWrite); err != nil {
				return err
			}
		}
		if exchange && r.Dst.Type == TypeDir {
			if err := CheckAccess(r.Cred, *r.Dst, MayWrite); err != nil {
				return err
			}
		}
	}
	if !exchange && r.Dst != nil && r.Dst.Type == TypeDir && !r.DstEmpty {
		return syscall.ENOTEMPTY
	}
	return nil
}

// checkRenameShape holds the rules that come before any permission check.
func checkRenameShape(r RenameCheck) error {
	if err := CheckRenameFlags(r.Flags); err != nil {
		return err
	}
	exchange := r.Flags&RenameExchange != 0
	switch {
	case exchange && r.Dst == nil:
		return syscall.ENOENT
	case r.Flags&RenameNoReplace != 0 && r.Dst != nil:
		return syscall.EEXIST
	case r.IntoOwnSubtree, r.DstIsAncestor && exchange:
		return syscall.EINVAL
	case r.DstIsAncestor:
		return syscall.ENOTEMPTY
	}
	return nil
}

// checkRenameTarget checks the target side: creating the new name, or
// removing the entry there.
func checkRenameTarget(r RenameCheck, exchange bool) error {
	if r.Dst == nil {
		return CheckAccess(r.Cred, r.DstDir, MayWrite|MayExec)
	}
	if err := mayDelete(r.Cred, r.DstDir, *r.Dst); err != nil || exchange {
		return err
	}
	srcDir, dstDir := r.Src.Type == TypeDir, r.Dst.Type == TypeDir
	switch {
	case srcDir && !dstDir:
		return syscall.ENOTDIR
	case !srcDir && dstDir:
		return syscall.EISDIR
	}
	return nil
}

// mayDelete checks that c may remove victim from dir: write and search
// permission on dir (EACCES), then the sticky rule (EPERM).
func mayDelete(c Cred, dir, victim Attr) error {
	if err := CheckAccess(c, dir, MayWrite|MayExec); err != nil {
		return err
	}
	return CheckSticky(c, dir, victim)
}

// CheckRemove applies unlink(2) and rmdir(2) rules to removing victim from
// dir, in Linux's order: EACCES, EPERM (sticky), then EISDIR for unlink of
// a directory or ENOTDIR for rmdir of anything else.
func CheckRemove(c Cred, dir, victim Attr, rmdir bool) error {
	if err := mayDelete(c, dir, victim); err != nil {
		return err
	}
	switch isDir := victim.Type == TypeDir; {
	case rmdir && !isDir:
		return syscall.ENOTDIR
	case !rmdir && isDir:
		return syscall.EISDIR
	}
	return nil
}

// CheckRenameFlags validates renameat2 flags on their own: EINVAL for
// unknown flags, RENAME_WHITEOUT (no whiteouts without an overlay) and
// RENAME_NOREPLACE together with RENAME_EXCHANGE.
func CheckRenameFlags(flags uint32) error {
	const known = RenameNoReplace | RenameExchange | RenameWhiteout
	switch {
	case flags&^known != 0, flags&RenameWhiteout != 0:
		return syscall.EINVAL
	case flags&RenameNoReplace != 0 && flags&RenameExchange != 0:
		return syscall.EINVAL
	}
	return nil
}

// CheckXattr validates an extended attribute name (ERANGE when empty or
// longer than MaxXattrName) and value (E2BIG past MaxXattrValue).
func CheckXattr(name string, value []byte) error {
	if name == "" || len(name) > MaxXattrName {
		return syscall.ERANGE
	}
	if len(value) > MaxXattrValue {
		return syscall.E2BIG
	}
	return nil
}
