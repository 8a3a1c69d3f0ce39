package meta

import (
	"encoding/binary"
	"syscall"
)

// POSIX ACLs (POSIX.1e draft 17, as Linux implements them).
//
// The access ACL and the mode are one thing seen two ways: the ACL's owner
// entry is the mode's owner bits, its other entry the other bits, and its
// mask entry (or, without a mask, its owning-group entry) the group bits.
// An ACL of just those three entries says nothing the mode does not, so it
// is never stored: an engine keeps an access ACL only while it has named
// users or groups. Setting the access ACL rewrites the mode; chmod rewrites
// the ACL's owner, mask (or group) and other entries.
//
// A directory's default ACL is not enforced; it is copied to what is
// created inside: a new inode's access ACL is the default ACL cut down by
// the mode the creator asked for (and a new directory inherits the default
// ACL itself), and the umask is not applied. Without a default ACL the
// umask applies as usual.
//
// The stored form is the kernel's xattr format (system.posix_acl_access and
// system.posix_acl_default): a little-endian uint32 version 2, then one
// 8-byte entry per ACL entry: uint16 tag, uint16 permission bits, uint32 id.

// ACL xattr names.
const (
	XattrACLAccess  = "system.posix_acl_access"
	XattrACLDefault = "system.posix_acl_default"
)

// ACL entry tags, as in <linux/posix_acl.h>. The order of the values is the
// order entries must appear in.
const (
	ACLUserObj  uint16 = 0x01
	ACLUser     uint16 = 0x02
	ACLGroupObj uint16 = 0x04
	ACLGroup    uint16 = 0x08
	ACLMask     uint16 = 0x10
	ACLOther    uint16 = 0x20
)

const (
	aclVersion   = 2
	aclHeaderLen = 4
	aclEntryLen  = 8
	aclNoID      = 0xffffffff // the id of the owner, group, mask and other entries
)

// ACLEntry is one entry of an ACL: a tag, an id for ACLUser and ACLGroup
// entries, and the rwx bits (MayRead|MayWrite|MayExec).
type ACLEntry struct {
	Tag  uint16
	Perm uint16
	ID   uint32
}

// ACL is a valid POSIX ACL: entries in canonical order (by tag, named
// entries by id; the ID of other entries is 0), exactly one owner, owning-group and other entry, and a
// mask entry whenever there are named entries. A nil ACL is "none".
type ACL []ACLEntry

// DecodeACL parses an ACL xattr value and validates it: EINVAL for a wrong
// version, a truncated entry, bad permission bits or an invalid ACL. A
// value with no entries decodes to nil (no ACL), as the kernel treats it.
func DecodeACL(b []byte) (ACL, error) {
	if len(b) < aclHeaderLen || (len(b)-aclHeaderLen)%aclEntryLen != 0 {
		return nil, syscall.EINVAL
	}
	if binary.LittleEndian.Uint32(b) != aclVersion {
		return nil, syscall.EINVAL
	}
	n := (len(b) - aclHeaderLen) / aclEntryLen
	if n == 0 {
		return nil, nil
	}
	acl := make(ACL, n)
	for i := range acl {
		p := b[aclHeaderLen+i*aclEntryLen:]
		acl[i] = ACLEntry{
			Tag:  binary.LittleEndian.Uint16(p),
			Perm: binary.LittleEndian.Uint16(p[2:]),
		}
		if t := acl[i].Tag; t == ACLUser || t == ACLGroup {
			acl[i].ID = binary.LittleEndian.Uint32(p[4:])
		}
	}
	if err := acl.valid(); err != nil {
		return nil, err
	}
	return acl, nil
}

// Encode returns the xattr form of acl; ids of unnamed entries are written
// as the kernel writes them (all ones).
func (acl ACL) Encode() []byte {
	b := make([]byte, aclHeaderLen, aclHeaderLen+len(acl)*aclEntryLen)
	binary.LittleEndian.PutUint32(b, aclVersion)
	for _, e := range acl {
		id := e.ID
		if e.Tag != ACLUser && e.Tag != ACLGroup {
			id = aclNoID
		}
		b = binary.LittleEndian.AppendUint16(b, e.Tag)
		b = binary.LittleEndian.AppendUint16(b, e.Perm)
		b = binary.LittleEndian.AppendUint32(b, id)
	}
	return b
}

// valid applies the kernel's posix_acl_valid: canonical order, no
// duplicates, the three required entries, a mask with named entries.
func (acl ACL) valid() error {
	var last uint16
	var lastID uint32
	var named, mask, required int
	for _, e := range acl {
		if e.Perm&^7 != 0 || e.Tag < last {
			return syscall.EINVAL
		}
		switch e.Tag {
		case ACLUserObj, ACLGroupObj, ACLOther, ACLMask:
			if e.Tag == last {
				return syscall.EINVAL
			}
			if e.Tag == ACLMask {
				mask++
			} else {
				required++
			}
		case ACLUser, ACLGroup:
			if e.Tag == last && e.ID <= lastID {
				return syscall.EINVAL
			}
			named++
		default:
			return syscall.EINVAL
		}
		last, lastID = e.Tag, e.ID
	}
	if required != 3 || (named > 0 && mask == 0) {
		return syscall.EINVAL
	}
	return nil
}

// find returns the index of the first entry with tag, or -1.
func (acl ACL) find(tag uint16) int {
	for i, e := range acl {
		if e.Tag == tag {
			return i
		}
	}
	return -1
}

// groupClass returns the index of the entry that holds the mode's group
// bits: the mask if there is one, else the owning group.
func (acl ACL) groupClass() int {
	if i := acl.find(ACLMask); i >= 0 {
		return i
	}
	return acl.find(ACLGroupObj)
}

// Minimal reports whether acl is equivalent to a mode: it has no named
// entries (a lone mask stands for the group bits). Setting such an access
// ACL only sets the mode.
func (acl ACL) Minimal() bool {
	return acl.find(ACLUser) < 0 && acl.find(ACLGroup) < 0
}

// Mode returns mode with its permission bits (0777) replaced by those acl
// encodes; the setuid, setgid and sticky bits are kept.
func (acl ACL) Mode(mode uint16) uint16 {
	m := mode &^ 0o777
	gc := acl.groupClass()
	for i, e := range acl {
		switch {
		case e.Tag == ACLUserObj:
			m |= e.Perm << 6
		case i == gc:
			m |= e.Perm << 3
		case e.Tag == ACLOther:
			m |= e.Perm
		}
	}
	return m
}

// Chmod returns a copy of acl whose owner, group-class and other entries
// hold the permission bits of mode, as chmod(2) on a file with an ACL: the
// named entries keep their bits, and the mask limits them.
func (acl ACL) Chmod(mode uint16) ACL {
	out := append(ACL(nil), acl...)
	gc := out.groupClass()
	for i := range out {
		switch {
		case out[i].Tag == ACLUserObj:
			out[i].Perm = mode >> 6 & 7
		case i == gc:
			out[i].Perm = mode >> 3 & 7
		case out[i].Tag == ACLOther:
			out[i].Perm = mode & 7
		}
	}
	return out
}

// Inherit returns what an inode created with permission bits mode in a
// directory with default ACL def gets: its mode (mode's bits cut down by
// the ACL, the umask not applied) and its access ACL (nil when equivalent
// to the mode). A new directory also takes def as its own default ACL.
// With def nil the umask applies and there is no ACL.
func Inherit(def ACL, mode, umask uint16) (uint16, ACL) {
	if def == nil {
		return mode &^ (umask & 0o777), nil
	}
	acl := append(ACL(nil), def...)
	gc := acl.groupClass()
	for i := range acl {
		switch {
		case acl[i].Tag == ACLUserObj:
			acl[i].Perm &= mode >> 6 & 7
		case i == gc:
			acl[i].Perm &= mode >> 3 & 7
		case acl[i].Tag == ACLOther:
			acl[i].Perm &= mode & 7
		}
	}
	mode = acl.Mode(mode)
	if len(acl) == 3 { // as Linux: a default ACL with a mask stays an ACL
		return mode, nil
	}
	return mode, acl
}

// CheckACLAccess is CheckAccess for an inode with access ACL acl (nil:
// CheckAccess itself), with POSIX.1e's algorithm: the owner entry for the
// owner; a matching named user entry, under the mask; else every group
// entry (owning group and named groups) that matches the caller's groups,
// under the mask, and access if one of them grants it; else the other
// entry.
func CheckACLAccess(c Cred, a Attr, acl ACL, mask uint32) error {
	if acl == nil || c.Trusted || c.Uid == 0 || mask == 0 {
		return CheckAccess(c, a, mask)
	}
	want := uint16(mask & 7)
	limit := uint16(7)
	if i := acl.find(ACLMask); i >= 0 {
		limit = acl[i].Perm
	}
	grant := func(perm uint16) error {
		if want&^perm != 0 {
			return syscall.EACCES
		}
		return nil
	}
	groupMatched := false
	for _, e := range acl {
		switch e.Tag {
		case ACLUserObj:
			if c.Uid == a.Uid {
				return grant(e.Perm)
			}
		case ACLUser:
			if c.Uid == e.ID {
				return grant(e.Perm & limit)
			}
		case ACLGroupObj, ACLGroup:
			gid := e.ID
			if e.Tag == ACLGroupObj {
				gid = a.Gid
			}
			if c.InGroup(gid) {
				groupMatched = true
				if grant(e.Perm&limit) == nil {
					return nil
				}
			}
		case ACLOther:
			if groupMatched {
				return syscall.EACCES
			}
			return grant(e.Perm)
		}
	}
	return syscall.EACCES
}
