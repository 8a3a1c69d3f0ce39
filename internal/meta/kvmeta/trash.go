package kvmeta

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"shoal/internal/meta"
)

// The trash (meta.Trash; docs/admin.md, "Trash").
//
// With Format.TrashDays > 0, the unlink of the last name of a regular
// file or symlink (Unlink, or a Rename over it) does not delete the
// inode: in the same transaction it gets a new name,
//
//	/.trash/YYYY-MM-DD-HH/<parent ino>-<ino>-<name>
//
// (the hour of the deletion in UTC; the name cut at a UTF-8 boundary so
// that the whole stays within meta.MaxNameLen, unique all the same since
// an inode is in the trash once at most; a cut name is kept whole in the
// xattr trusted.shoal.trash-name, which restore reads and removes). So there is no moment where the
// file is in neither place, and it keeps one link: open handles go on
// working, and nothing about orphans changes. A file with other links
// only loses the name, as before; other types (FIFOs, devices, sockets)
// are deleted, and rmdir needs an empty directory, so none is kept.
//
// The directories are made on demand by the operation that needs them,
// owned by root, mode 0700: a file in the trash has left the protection
// of its directory, so only root may look (an administrator may chmod
// /.trash to open it). They carry flagTrash: creating, linking or
// renaming anything into them is EPERM for everyone, root included, and
// an unlink in them deletes for good (no trash of the trash). Their inode
// numbers are taken from the client's batch before the transaction, as
// Mknod's, and go back unused.
//
// Usage: a trashed file still counts in the volume's usage and its limits
// (df, status), until the trash lets it go. It has left its directory's
// tree, so directory quotas stop counting it (Attr.Parent becomes the
// hour directory; a quota on the root still counts it), and a restore
// charges the quota of the directory it goes back to (EDQUOT if full).
//
// Emptying: EmptyTrash deletes whole hour directories, a batch of entries
// per transaction, through the unlink path (so slices are freed only
// when no other file references them, and a file still open becomes an
// orphan). Mounts' cleaners call ExpireTrash about once a minute; mounts
// racing on one hour only conflict and retry, as each deletion is
// idempotent. TrashDays is re-read with the quota list (every
// quotaRefresh flush intervals, 3 s by default), so `shoal trash days`
// reaches running mounts within that.

// trashMode is the permission bits of the trash directories.
const trashMode = 0o700

// trashSlot holds the inode numbers reserved for the trash directories an
// operation may have to make (/.trash and the hour), and which it used.
type trashSlot struct {
	inos [2]meta.Ino
	used int
}

// next returns a reserved inode number.
func (s *trashSlot) next() (meta.Ino, bool) {
	if s.used >= len(s.inos) {
		return 0, false
	}
	s.used++
	return s.inos[s.used-1], true
}

// trashIDs reserves inode numbers for an operation that may move a file
// to the trash: nil while the trash is off.
func (e *Engine) trashIDs(ctx context.Context) ([]meta.Ino, error) {
	if e.trashDays.Load() <= 0 {
		return nil, nil
	}
	ids := make([]meta.Ino, 2)
	for i := range ids {
		var err error
		if ids[i], err = e.newInode(ctx); err != nil {
			e.giveBackIDs(ids[:i], 0)
			return nil, err
		}
	}
	return ids, nil
}

// slotFor gives one attempt of an operation the reserved ids.
func slotFor(ids []meta.Ino) *trashSlot {
	if ids == nil {
		return nil
	}
	return &trashSlot{inos: [2]meta.Ino{ids[0], ids[1]}}
}

// giveBackIDs returns the reserved ids the committed attempt did not use.
func (e *Engine) giveBackIDs(ids []meta.Ino, used int) {
	for _, ino := range ids[min(used, len(ids)):] {
		e.inodes.giveBack(uint64(ino))
	}
}

// usedIDs is how many reserved ids slot used (0 for none).
func usedIDs(s *trashSlot) int {
	if s == nil {
		return 0
	}
	return s.used
}

// toTrash reports whether removing the last name of a, in parent, moves
// it to the trash.
func (t *txn) toTrash(parent meta.Ino, a *meta.Attr) bool {
	return t.trash != nil && a.Nlink == 1 &&
		(a.Type == meta.TypeFile || a.Type == meta.TypeSymlink) &&
		t.flags[parent]&flagTrash == 0
}

// moveToTrash gives ino, whose last name parent/name goes, its trash
// name. The caller removes (or replaces) the old entry. ok is false when
// there is no trash to move to (a /.trash that is not a directory): the
// caller deletes as usual.
func (t *txn) moveToTrash(parent meta.Ino, name string, ino meta.Ino, a *meta.Attr) (rm meta.Removed, ok bool, err error) {
	hour, h, ok, err := t.trashHourDir()
	if err != nil || !ok {
		return meta.Removed{}, false, err
	}
	entry := trashEntryName(parent, ino, name)
	t.tx.Set(dentryKey(hour, entry), encodeDentry(ino, a.Type))
	if _, _, kept, _ := parseTrashName(entry); kept != name {
		t.tx.Set(xattrKey(ino, trashNameXattr), []byte(name))
		t.flags[ino] |= flagXattrs
	}
	t.touchDir(hour, h)
	t.reparent(a, hour)
	a.Ctime = t.now
	t.touch(ino)
	return meta.Removed{Ino: ino, Attr: *a}, true, nil
}

// reparent moves a's usage from the directory quotas above its Parent to
// those above dir, and makes dir its Parent.
func (t *txn) reparent(a *meta.Attr, dir meta.Ino) {
	space := spaceOf(a)
	t.charge(a.Parent, -space, -1)
	a.Parent = dir
	t.charge(dir, space, 1)
}

// trashNameXattr holds the whole name of a file whose trash entry name
// had to cut it: restore and list use it, restore removes it.
const trashNameXattr = "trusted.shoal.trash-name"

// trashedName returns the whole name kept for ino (trashNameXattr), or
// cut, the name its trash entry shows.
func (t *txn) trashedName(ino meta.Ino, cut string) (string, error) {
	if t.flags[ino]&flagXattrs == 0 {
		return cut, nil
	}
	full, err := t.tx.Get(xattrKey(ino, trashNameXattr))
	if err != nil || full == nil || !strings.HasPrefix(string(full), cut) {
		return cut, err
	}
	return string(full), nil
}

// trashEntryName is "<parent>-<ino>-<name>", name cut to fit (the whole
// name is then kept in trashNameXattr).
func trashEntryName(parent, ino meta.Ino, name string) string {
	prefix := strconv.FormatUint(uint64(parent), 10) + "-" + strconv.FormatUint(uint64(ino), 10) + "-"
	return prefix + cutName(name, meta.MaxNameLen-len(prefix))
}

// cutName cuts name to at most n bytes, at a UTF-8 character boundary.
func cutName(name string, n int) string {
	if len(name) <= n {
		return name
	}
	for n > 0 && !utf8.RuneStart(name[n]) {
		n--
	}
	return name[:n]
}

// parseTrashName splits an entry name made by trashEntryName.
func parseTrashName(s string) (parent, ino meta.Ino, name string, ok bool) {
	var fields [2]uint64
	for i := range fields {
		n := 0
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		if n == 0 || n >= len(s) || s[n] != '-' {
			return 0, 0, "", false
		}
		v, err := strconv.ParseUint(s[:n], 10, 64)
		if err != nil {
			return 0, 0, "", false
		}
		fields[i], s = v, s[n+1:]
	}
	return meta.Ino(fields[0]), meta.Ino(fields[1]), s, s != ""
}

// trashHourDir returns the hour directory for now, made if need be.
func (t *txn) trashHourDir() (meta.Ino, *meta.Attr, bool, error) {
	root, err := t.dir(meta.RootIno)
	if err != nil {
		return 0, nil, false, err
	}
	trash, ta, ok, err := t.trashDir(meta.RootIno, root, meta.TrashName)
	if err != nil || !ok {
		return 0, nil, false, err
	}
	hour := time.Unix(0, t.now).UTC().Format(meta.TrashHourLayout)
	return t.trashDir(trash, ta, hour)
}

// trashDir finds or makes the trash directory dir/name. An existing
// directory is taken over (flagged); another type there means no trash.
func (t *txn) trashDir(dir meta.Ino, d *meta.Attr, name string) (meta.Ino, *meta.Attr, bool, error) {
	ino, typ, err := t.lookup(dir, name)
	switch {
	case err == nil && typ != meta.TypeDir:
		return 0, nil, false, nil
	case err == nil:
		a, err := t.attr(ino)
		if err == nil && t.flags[ino]&flagTrash == 0 {
			t.flags[ino] |= flagTrash
			t.touch(ino)
		}
		return ino, a, err == nil, err
	case err != syscall.ENOENT:
		return 0, nil, false, err
	}
	ino, ok := t.trash.next()
	if !ok {
		return 0, nil, false, nil
	}
	a := &meta.Attr{Type: meta.TypeDir, Mode: trashMode, Atime: t.now, Mtime: t.now, Ctime: t.now,
		Nlink: 2, Length: dirLength, Parent: dir}
	t.put(ino, a)
	t.flags[ino] |= flagTrash
	t.tx.Set(dentryKey(dir, name), encodeDentry(ino, meta.TypeDir))
	d.Nlink++
	t.touch(dir)
	t.touchDir(dir, d)
	t.files++
	t.charge(dir, 0, 1)
	return ino, a, true, nil
}

// refuseTrash is EPERM for a new entry in a trash directory.
func (t *txn) refuseTrash(dir meta.Ino) error {
	if t.flags[dir]&flagTrash != 0 {
		return syscall.EPERM
	}
	return nil
}

// refreshTrashDays re-reads Format.TrashDays.
func (e *Engine) refreshTrashDays(ctx context.Context) error {
	return e.view(ctx, func(t *txn) error {
		f, err := t.format()
		if err == nil {
			e.trashDays.Store(int64(f.TrashDays))
		}
		return err
	})
}
