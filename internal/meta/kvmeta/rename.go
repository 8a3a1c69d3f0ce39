package kvmeta

import (
	"context"
	"syscall"

	"shoal/internal/meta"
)

// renameSide is one end of a rename: a directory, a name in it, and the
// entry found there (ino 0 if none).
type renameSide struct {
	parent meta.Ino
	dir    *meta.Attr
	name   string
	ino    meta.Ino
	attr   *meta.Attr
}

// Rename implements rename(2) and renameat2(2) in one transaction. The
// legality rules are meta.CheckRename's; this function gathers what they
// need (both parents, both entries, whether the target is empty, whether a
// moved directory would land in its own subtree) and applies the result.
func (e *Engine) Rename(ctx context.Context, req meta.RenameRequest) (meta.Removed, error) {
	if err := checkRenameNames(req); err != nil {
		return meta.Removed{}, err
	}
	ids, err := e.trashIDs(ctx)
	if err != nil {
		return meta.Removed{}, wrap(err, "rename %d/%q", req.OldParent, req.OldName)
	}
	var rm meta.Removed
	var slot *trashSlot
	err = e.update(ctx, func(t *txn) error {
		slot = slotFor(ids)
		t.trash = slot
		var err error
		rm, err = t.rename(req)
		return err
	})
	e.giveBackIDs(ids, usedIDs(slot))
	return rm, wrap(err, "rename %d/%q to %d/%q", req.OldParent, req.OldName, req.NewParent, req.NewName)
}

func checkRenameNames(req meta.RenameRequest) error {
	if err := meta.CheckRenameFlags(req.Flags); err != nil {
		return err
	}
	for _, name := range []string{req.OldName, req.NewName} {
		if name == "." || name == ".." {
			return syscall.EBUSY
		}
		if err := meta.CheckName(name); err != nil {
			return err
		}
	}
	return nil
}

func (t *txn) rename(req meta.RenameRequest) (meta.Removed, error) {
	src, dst, err := t.renameSides(req)
	if err != nil {
		return meta.Removed{}, err
	}
	if src.ino == dst.ino {
		// The same inode under both names: nothing to do, as rename(2)
		// says, except that NOREPLACE still sees a taken name.
		if req.Flags&meta.RenameNoReplace != 0 {
			return meta.Removed{}, syscall.EEXIST
		}
		return meta.Removed{}, nil
	}
	// A rename that moves something: its caller records which inode (a
	// same-inode rename commits nothing, and runs again harmlessly).
	if req.Moving != nil {
		req.Moving(src.ino)
	}
	if err := t.refuseTrashRename(req.Flags, src, dst); err != nil {
		return meta.Removed{}, err
	}
	if err := t.checkRename(req.Flags, src, dst); err != nil {
		return meta.Removed{}, err
	}
	if err := t.checkQuotaMove(src.parent, dst.parent); err != nil {
		return meta.Removed{}, err
	}
	if req.Flags&meta.RenameExchange != 0 {
		t.exchange(src, dst)
		return meta.Removed{}, nil
	}
	var rm meta.Removed
	if dst.ino != 0 {
		if rm, err = t.replaceTarget(dst); err != nil {
			return meta.Removed{}, err
		}
	}
	t.tx.Delete(dentryKey(src.parent, src.name))
	t.tx.Set(dentryKey(dst.parent, dst.name), encodeDentry(src.ino, src.attr.Type))
	t.moved(src, dst)
	t.touchDir(src.parent, src.dir)
	t.touchDir(dst.parent, dst.dir)
	return rm, nil
}

// renameSides reads both parents (with search permission) and both
// entries; the target may be missing. Write permission comes later, in
// meta.CheckRename, so a missing source is ENOENT as on Linux.
func (t *txn) renameSides(req meta.RenameRequest) (src, dst renameSide, err error) {
	src = renameSide{parent: req.OldParent, name: req.OldName}
	dst = renameSide{parent: req.NewParent, name: req.NewName}
	// Two round trips where the store reads many keys in one: both
	// parents and entries, then both inodes.
	if err = t.prefetch(nil, dirEntry{src.parent, src.name}, dirEntry{dst.parent, dst.name}); err != nil {
		return src, dst, err
	}
	for _, s := range []*renameSide{&src, &dst} {
		if s.dir, err = t.dirFor(s.parent, meta.MayExec); err != nil {
			return src, dst, err
		}
	}
	if src.ino, _, err = t.lookup(src.parent, src.name); err != nil {
		return src, dst, err
	}
	dst.ino, _, err = t.lookup(dst.parent, dst.name)
	dstFound := err == nil
	if err != nil && err != syscall.ENOENT {
		return src, dst, err
	}
	inos := []meta.Ino{src.ino}
	if dstFound {
		inos = append(inos, dst.ino)
	}
	if err = t.prefetch(inos); err != nil {
		return src, dst, err
	}
	if src.attr, err = t.attr(src.ino); err != nil || !dstFound {
		return src, dst, err
	}
	dst.attr, err = t.attr(dst.ino)
	return src, dst, err
}

// checkRename gathers the facts meta.CheckRename needs and applies it.
func (t *txn) checkRename(flags uint32, src, dst renameSide) error {
	rc := meta.RenameCheck{
		Flags: flags, Cred: t.cred, SrcDir: *src.dir, DstDir: *dst.dir,
		SameParent: src.parent == dst.parent, Src: *src.attr,
	}
	if dst.ino != 0 {
		rc.Dst = dst.attr
		if dst.attr.Type == meta.TypeDir && flags&meta.RenameExchange == 0 {
			empty, err := t.isEmpty(dst.ino)
			if err != nil {
				return err
			}
			rc.DstEmpty = empty
		}
	}
	if err := t.ancestry(&rc, src, dst); err != nil {
		return err
	}
	return meta.CheckRename(rc)
}

// ancestry fills in whether a directory would move under itself (the
// source is the new parent or its ancestor) and whether the target is the
// old parent or its ancestor. Within one directory neither can happen.
func (t *txn) ancestry(rc *meta.RenameCheck, src, dst renameSide) error {
	if src.parent == dst.parent {
		return nil
	}
	var err error
	if src.attr.Type == meta.TypeDir {
		if rc.IntoOwnSubtree, err = t.isAncestor(src.ino, dst.parent); err != nil {
			return err
		}
	}
	if dst.attr != nil && dst.attr.Type == meta.TypeDir {
		rc.DstIsAncestor, err = t.isAncestor(dst.ino, src.parent)
	}
	return err
}

// isAncestor walks from dir up to the root through the directories' Parent
// fields and reports whether it meets anc.
func (t *txn) isAncestor(anc, dir meta.Ino) (bool, error) {
	for hops := 0; ; hops++ {
		if dir == anc {
			return true, nil
		}
		if dir == meta.RootIno || hops > 1<<16 {
			return false, nil
		}
		a, err := t.attr(dir)
		if err != nil {
			return false, err
		}
		dir = a.Parent
	}
}

// replaceTarget removes the entry rename overwrites.
func (t *txn) replaceTarget(dst renameSide) (meta.Removed, error) {
	if dst.attr.Type != meta.TypeDir {
		return t.removeLast(dst.parent, dst.name, dst.ino, dst.attr)
	}
	if dst.dir.Nlink > 2 {
		dst.dir.Nlink--
		t.touch(dst.parent)
	}
	rm := meta.Removed{Ino: dst.ino, Attr: *dst.attr}
	rm.Attr.Nlink = 0
	return rm, t.deleteInode(dst.ino, dst.attr)
}

// moved updates the moved inode: its ctime, and for a directory that
// changes parent, its Parent and both parents' link counts.
func (t *txn) moved(src, dst renameSide) {
	src.attr.Ctime = t.now
	t.touch(src.ino)
	if src.parent == dst.parent {
		return
	}
	src.attr.Parent = dst.parent // every type: directory quotas (dirquota.go)
	if src.attr.Type != meta.TypeDir {
		return
	}
	if src.dir.Nlink > 2 {
		src.dir.Nlink--
	}
	dst.dir.Nlink++
	t.touch(src.parent)
	t.touch(dst.parent)
}

// exchange swaps two entries (RENAME_EXCHANGE).
func (t *txn) exchange(src, dst renameSide) {
	t.tx.Set(dentryKey(src.parent, src.name), encodeDentry(dst.ino, dst.attr.Type))
	t.tx.Set(dentryKey(dst.parent, dst.name), encodeDentry(src.ino, src.attr.Type))
	t.moved(src, dst)
	t.moved(renameSide{parent: dst.parent, dir: dst.dir, ino: dst.ino, attr: dst.attr},
		renameSide{parent: src.parent, dir: src.dir})
	t.touchDir(src.parent, src.dir)
	t.touchDir(dst.parent, dst.dir)
}

// refuseTrashRename is EPERM for a rename that would put an entry into a
// trash directory (either way, with RENAME_EXCHANGE) or move one of the
// trash directories themselves. Moving a file out of the trash is a
// rename like any other.
func (t *txn) refuseTrashRename(flags uint32, src, dst renameSide) error {
	if err := t.refuseTrash(dst.parent); err != nil {
		return err
	}
	if t.flags[src.ino]&flagTrash != 0 {
		return syscall.EPERM
	}
	if flags&meta.RenameExchange != 0 {
		return t.refuseTrash(src.parent)
	}
	return nil
}
