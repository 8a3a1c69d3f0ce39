package kvmeta

import (
	"context"
	"syscall"

	"shoal/internal/meta"
)

// Unlink removes parent/name, a non-directory.
func (e *Engine) Unlink(ctx context.Context, parent meta.Ino, name string) (meta.Removed, error) {
	if name == "." || name == ".." {
		return meta.Removed{}, syscall.EISDIR
	}
	if err := meta.CheckName(name); err != nil {
		return meta.Removed{}, err
	}
	ids, err := e.trashIDs(ctx)
	if err != nil {
		return meta.Removed{}, wrap(err, "unlink %d/%q", parent, name)
	}
	var rm meta.Removed
	var slot *trashSlot
	err = e.update(ctx, func(t *txn) error {
		slot = slotFor(ids)
		t.trash = slot
		p, ino, a, err := t.entryToRemove(parent, name, false)
		if err != nil {
			return err
		}
		// The inode first: its reads (is it open elsewhere? its chunks)
		// then go out before any write is buffered (see sqlkv batching).
		if rm, err = t.removeLast(parent, name, ino, a); err != nil {
			return err
		}
		t.tx.Delete(dentryKey(parent, name))
		t.touchDir(parent, p)
		return nil
	})
	e.giveBackIDs(ids, usedIDs(slot))
	return rm, wrap(err, "unlink %d/%q", parent, name)
}

// removeLast takes the name parent/name from non-directory ino: to the
// trash when it is the last name of a file the trash keeps (trash.go),
// else dropLink. The caller removes or replaces the entry.
func (t *txn) removeLast(parent meta.Ino, name string, ino meta.Ino, a *meta.Attr) (meta.Removed, error) {
	if t.toTrash(parent, a) {
		rm, ok, err := t.moveToTrash(parent, name, ino, a)
		if err != nil || ok {
			return rm, err
		}
	}
	return t.dropLink(ino, a)
}

// entryToRemove finds parent/name for unlink or rmdir and applies
// meta.CheckRemove. As on Linux, a missing name is ENOENT even where the
// caller could not remove it: search permission is checked before the
// lookup, the rest after.
func (t *txn) entryToRemove(parent meta.Ino, name string, rmdir bool) (*meta.Attr, meta.Ino, *meta.Attr, error) {
	if err := t.prefetch(nil, dirEntry{parent, name}); err != nil {
		return nil, 0, nil, err
	}
	p, err := t.dirFor(parent, meta.MayExec)
	if err != nil {
		return nil, 0, nil, err
	}
	ino, _, err := t.lookup(parent, name)
	if err != nil {
		return nil, 0, nil, err
	}
	a, err := t.attr(ino)
	if err != nil {
		return nil, 0, nil, err
	}
	return p, ino, a, meta.CheckRemove(t.cred, *p, *a, rmdir)
}

// dropLink takes one link from non-directory ino. A regular file whose
// last link goes while it is open anywhere becomes an orphan (its data
// stays until the last session holding it lets go); any other inode is
// deleted at once.
func (t *txn) dropLink(ino meta.Ino, a *meta.Attr) (meta.Removed, error) {
	if a.Nlink > 0 {
		a.Nlink--
	}
	a.Ctime = t.now
	t.touch(ino)
	rm := meta.Removed{Ino: ino, Attr: *a}
	if a.Nlink > 0 {
		return rm, nil
	}
	if a.Type == meta.TypeFile {
		open, err := t.openAnywhere(ino)
		if err != nil {
			return rm, err
		}
		if open {
			t.markOrphan(ino)
			rm.Orphan = true
			return rm, nil
		}
	}
	return rm, t.deleteInode(ino, a)
}

// openAnywhere reports whether regular file ino is open in this client
// (its open check or its counted opens) or in another session (see
// open.go). This client's stale record, if any, is dropped on the way.
// An inode this client created and nobody else recorded open since
// (flagOpened clear) can have no record but this client's: then there is
// nothing to read, and that record, if any, is deleted blind.
func (t *txn) openAnywhere(ino meta.Ino) (bool, error) {
	if t.isOpen(ino) || t.opens.holds(ino) {
		return true, nil
	}
	if t.flags[ino]&flagOpened == 0 && t.opens.madeHere(ino) {
		// Dropped whether or not this client believes it stored: an
		// earlier attempt of this transaction, rolled back (a conflict),
		// may have noted it dropped already (unrecorded) and left it.
		if t.session != 0 {
			t.dropOpen(ino, t.session)
			t.opens.unrecorded(ino)
		}
		return false, nil
	}
	return t.openElsewhere(ino)
}

// deleteInode removes an inode with everything keyed by it: attr, symlink
// target, xattrs, and a file's chunks (releasing their slice references).
// ino's attributes must have been read in this transaction (their flags
// say whether there are xattrs to find). An orphan mark is the caller's.
func (t *txn) deleteInode(ino meta.Ino, a *meta.Attr) error {
	// A snapshot's inodes were never counted in the usage (snapshot.go).
	counted := !t.frozen(ino)
	if a.Type == meta.TypeFile {
		// An empty file has no chunks: truncation to 0 deletes them all,
		// and every other way of adding records extends the length.
		if a.Length > 0 {
			if err := t.deleteChunks(ino, 0, noEnd); err != nil {
				return err
			}
		}
		if counted {
			t.space -= spaceOf(a)
		}
	}
	if a.Type == meta.TypeSymlink {
		t.tx.Delete(symlinkKey(ino))
	}
	if t.flags[ino]&flagXattrs != 0 {
		if err := t.deleteXattrs(ino); err != nil {
			return err
		}
	}
	t.drop(ino)
	if counted {
		t.files--
		t.charge(a.Parent, -spaceOf(a), -1)
	}
	if t.opens != nil {
		t.opens.forget(ino)
	}
	return nil
}

// deleteXattrs removes all of ino's extended attributes.
func (t *txn) deleteXattrs(ino meta.Ino) error {
	var keys [][]byte
	err := t.tx.Scan(inoKey(kindXattr, ino), nil, 0, func(key, _ []byte) bool {
		keys = append(keys, key)
		return true
	})
	for _, k := range keys {
		t.tx.Delete(k)
	}
	return err
}

// Rmdir removes the empty directory parent/name.
func (e *Engine) Rmdir(ctx context.Context, parent meta.Ino, name string) error {
	switch name {
	case ".":
		return syscall.EINVAL
	case "..":
		return syscall.ENOTEMPTY
	}
	if err := meta.CheckName(name); err != nil {
		return err
	}
	err := e.update(ctx, func(t *txn) error {
		p, ino, a, err := t.entryToRemove(parent, name, true)
		if err != nil {
			return err
		}
		return t.removeDir(parent, p, name, ino, a)
	})
	return wrap(err, "rmdir %d/%q", parent, name)
}

// removeDir deletes the empty directory ino, entry parent/name.
func (t *txn) removeDir(parent meta.Ino, p *meta.Attr, name string, ino meta.Ino, a *meta.Attr) error {
	empty, err := t.isEmpty(ino)
	if err != nil {
		return err
	}
	if !empty {
		return syscall.ENOTEMPTY
	}
	t.tx.Delete(dentryKey(parent, name))
	if p.Nlink > 2 {
		p.Nlink--
		t.touch(parent)
	}
	t.touchDir(parent, p)
	return t.deleteInode(ino, a)
}

// purgeOrphan deletes orphan ino (no link left, open nowhere) and its mark.
// An orphan belongs to no snapshot even if it is frozen: deleting its
// snapshot unlinked it while a session held it open, and its last release
// purges it here, which is not a change to any snapshot.
func (t *txn) purgeOrphan(ino meta.Ino, a *meta.Attr) error {
	if err := t.unmarkOrphan(ino); err != nil {
		return err
	}
	hit := t.frozenHit
	err := t.deleteInode(ino, a) // a frozen inode charges no parent: it touches only ino
	t.frozenHit = hit
	return err
}

// Purge deletes an orphan that no session holds open any more: this
// client's own record of it is dropped unless this client still counts an
// open of it, and another session's record keeps it (that session's last
// release, or its end, purges it). Inodes that still have links, or are
// gone, are left alone, so Purge is idempotent.
func (e *Engine) Purge(ctx context.Context, ino meta.Ino) error {
	err := e.update(ctx, func(t *txn) error {
		if t.opens.holds(ino) {
			return nil
		}
		a, err := t.attr(ino)
		if err == syscall.ENOENT {
			return nil
		}
		if err != nil || a.Nlink > 0 {
			return err
		}
		elsewhere, err := t.openElsewhere(ino)
		if err != nil || elsewhere {
			return err
		}
		return t.purgeOrphan(ino, a)
	})
	return wrap(err, "purge %d", ino)
}
