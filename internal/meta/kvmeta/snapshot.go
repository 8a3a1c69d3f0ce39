package kvmeta

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"shoal/internal/meta"
)

// Snapshots are tree copies (clone.go) kept read-only under the volume
// root's /.snapshots directory, one directory (or file) per snapshot, with
// a record 'Y' name → JSON saying what it copies. Every inode of a
// snapshot, and /.snapshots itself, is frozen (frozen.go): nothing
// changes them but these commands. A snapshot's files share their slices
// with the volume, so gc and the cleaner keep every block a snapshot
// needs; they are not counted in the volume's usage (space or inodes),
// which counts what the live tree shows.
//
// Snapshots of the whole volume leave out /.snapshots and /.trash.

// SnapshotDir is the name of the root directory that holds snapshots.
const SnapshotDir = ".snapshots"

// trashDir is the root directory of deleted files (left out of snapshots).
const trashDir = ".trash"

func snapKey(name string) []byte { return append([]byte{kindSnap}, name...) }

// CreateSnapshot implements meta.Snapshots.
func (e *Engine) CreateSnapshot(ctx context.Context, name, path string) (meta.Snapshot, error) {
	if err := meta.CheckName(name); err != nil {
		return meta.Snapshot{}, err
	}
	ctx = thawed(meta.WithCred(ctx, meta.Cred{Trusted: true}))
	var snap meta.Snapshot
	err := e.exclusive(ctx, func(t *txn) error {
		if raw, err := t.tx.Get(snapKey(name)); err != nil || raw != nil {
			return firstErr(err, syscall.EEXIST)
		}
		src, err := t.resolvePath(path)
		if err != nil {
			return err
		}
		if inside, err := t.inSnapshots(src); err != nil || inside {
			return firstErr(err, syscall.EINVAL)
		}
		dir, d, err := t.snapshotDir(true)
		if err != nil {
			return err
		}
		if _, _, err := t.lookup(dir, name); err == nil {
			return syscall.EEXIST // left by a delete that stopped half-way
		}
		a, err := t.attr(src)
		if err != nil {
			return err
		}
		c := newCopier(t, copyOpts{frozen: true, preserve: true,
			skipRoot: map[string]bool{SnapshotDir: true, trashDir: true}})
		ino, err := c.copyTree(src, dir)
		if err != nil {
			return err
		}
		t.tx.Set(dentryKey(dir, name), encodeDentry(ino, a.Type))
		if a.Type == meta.TypeDir {
			d.Nlink++
		}
		t.touchDir(dir, d)
		t.touch(dir)
		snap = meta.Snapshot{Name: name, Path: "/" + strings.Join(splitPath(path), "/"),
			Ino: ino, Created: t.now, Inodes: c.inodes, Bytes: c.space}
		raw, err := json.Marshal(snap)
		t.tx.Set(snapKey(name), raw)
		return err
	})
	return snap, wrap(err, "snapshot %q of %q", name, path)
}

// snapshotDir returns /.snapshots, creating it (frozen, root's, 0755)
// when create is set; ENOENT if absent otherwise. A name .snapshots in the
// root that is not the snapshot directory is EEXIST: the user must move it.
func (t *txn) snapshotDir(create bool) (meta.Ino, *meta.Attr, error) {
	ino, _, err := t.lookup(meta.RootIno, SnapshotDir)
	if err == nil {
		a, err := t.attr(ino)
		if err != nil {
			return 0, nil, err
		}
		if a.Type != meta.TypeDir || !t.frozen(ino) {
			return 0, nil, fmt.Errorf("%w: /%s in the volume is not the snapshot directory: rename it", syscall.EEXIST, SnapshotDir)
		}
		return ino, a, nil
	}
	if err != syscall.ENOENT || !create {
		return 0, nil, err
	}
	root, err := t.dir(meta.RootIno)
	if err != nil {
		return 0, nil, err
	}
	c := newCopier(t, copyOpts{})
	if ino, err = c.alloc(); err != nil {
		return 0, nil, err
	}
	a := &meta.Attr{Type: meta.TypeDir, Mode: 0o755, Nlink: 2, Length: dirLength,
		Atime: t.now, Mtime: t.now, Ctime: t.now, Parent: meta.RootIno}
	t.put(ino, a)
	t.flags[ino] = flagFrozen
	t.tx.Set(dentryKey(meta.RootIno, SnapshotDir), encodeDentry(ino, meta.TypeDir))
	root.Nlink++
	t.touch(meta.RootIno)
	t.touchDir(meta.RootIno, root)
	return ino, a, nil
}

// inSnapshots reports whether ino is /.snapshots or inside it.
func (t *txn) inSnapshots(ino meta.Ino) (bool, error) {
	if ino == meta.RootIno {
		return false, nil
	}
	if _, err := t.attr(ino); err != nil {
		return false, err
	}
	return t.frozen(ino), nil
}

// ListSnapshots implements meta.Snapshots.
func (e *Engine) ListSnapshots(ctx context.Context) ([]meta.Snapshot, error) {
	var out []meta.Snapshot
	err := e.view(ctx, func(t *txn) error {
		out = out[:0]
		var failed error
		err := t.tx.Scan([]byte{kindSnap}, nil, 0, func(_, v []byte) bool {
			var s meta.Snapshot
			if failed = json.Unmarshal(v, &s); failed != nil {
				return false
			}
			out = append(out, s)
			return true
		})
		return firstErr(failed, err)
	})
	slices.SortFunc(out, func(a, b meta.Snapshot) int {
		if a.Created != b.Created {
			return int(min(max(a.Created-b.Created, -1), 1))
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, wrap(err, "list snapshots")
}

// snapshot returns the record of snapshot name: ENOENT if absent.
func (e *Engine) snapshot(ctx context.Context, name string) (meta.Snapshot, error) {
	var s meta.Snapshot
	err := e.view(ctx, func(t *txn) error {
		raw, err := t.tx.Get(snapKey(name))
		if err != nil || raw == nil {
			return firstErr(err, syscall.ENOENT)
		}
		return json.Unmarshal(raw, &s)
	})
	return s, err
}

// DeleteSnapshot implements meta.Snapshots. The tree goes in many small
// transactions, deepest entries first, and the record last, so a delete
// that stops half-way (a crash) is finished by running it again; until
// then the snapshot is listed and partly there.
func (e *Engine) DeleteSnapshot(ctx context.Context, name string) error {
	if err := meta.CheckName(name); err != nil {
		return err
	}
	ctx = thawed(meta.WithCred(ctx, meta.Cred{}))
	if _, err := e.snapshot(ctx, name); err != nil {
		return wrap(err, "delete snapshot %q", name)
	}
	dir, err := e.Lookup(ctx, meta.RootIno, SnapshotDir)
	if err != nil {
		return wrap(err, "delete snapshot %q", name)
	}
	if ent, err := e.Lookup(ctx, dir.Ino, name); err == nil && ent.Attr.Type == meta.TypeDir {
		if err := e.emptyTree(ctx, ent.Ino); err != nil {
			return wrap(err, "delete snapshot %q", name)
		}
	} else if err != nil && err != syscall.ENOENT {
		return wrap(err, "delete snapshot %q", name)
	}
	err = e.update(ctx, func(t *txn) error {
		if _, _, err := t.lookup(dir.Ino, name); err == nil {
			if err := t.removeEntry(dir.Ino, name); err != nil {
				return err
			}
		} else if err != syscall.ENOENT {
			return err
		}
		t.tx.Delete(snapKey(name))
		return nil
	})
	return wrap(err, "delete snapshot %q", name)
}

// emptyTree deletes everything under directory dir, deepest first, one
// batch of entries per transaction.
func (e *Engine) emptyTree(ctx context.Context, dir meta.Ino) error {
	for {
		ents, err := e.Readdir(ctx, dir, "", 256, false)
		if err != nil || len(ents) == 0 {
			return err
		}
		for _, ent := range ents {
			if ent.Type == meta.TypeDir {
				if err := e.emptyTree(ctx, ent.Ino); err != nil {
					return err
				}
			}
		}
		err = e.update(ctx, func(t *txn) error {
			for _, ent := range ents {
				if err := t.removeEntry(dir, ent.Name); err != nil && err != syscall.ENOENT {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
}

// removeEntry removes parent/name, an empty directory or another type,
// as root. A file open in some session's record becomes an orphan as
// usual; this client's own open check is not asked (a snapshot delete
// opens nothing).
func (t *txn) removeEntry(parent meta.Ino, name string) error {
	t.isOpen = func(meta.Ino) bool { return false }
	p, err := t.dir(parent)
	if err != nil {
		return err
	}
	ino, typ, err := t.lookup(parent, name)
	if err != nil {
		return err
	}
	a, err := t.attr(ino)
	if err != nil {
		return err
	}
	if typ == meta.TypeDir {
		return t.removeDir(parent, p, name, ino, a)
	}
	if _, err := t.dropLink(ino, a); err != nil {
		return err
	}
	t.tx.Delete(dentryKey(parent, name))
	t.touchDir(parent, p)
	return nil
}

// RestoreSnapshot implements meta.Snapshots: one exclusive transaction
// renames whatever is at the target aside (name.before-restore-TIME) and
// puts a writable copy of the snapshot's tree there.
func (e *Engine) RestoreSnapshot(ctx context.Context, name, sub string) (string, error) {
	snap, err := e.snapshot(ctx, name)
	if err != nil {
		return "", wrap(err, "restore snapshot %q", name)
	}
	target := append(splitPath(snap.Path), splitPath(sub)...)
	if len(target) == 0 {
		return "", fmt.Errorf("restore snapshot %q: the snapshot is of the whole volume: give the path of a directory or file in it to restore (--path)", name)
	}
	ctx = thawed(meta.WithCred(ctx, meta.Cred{}))
	var aside string
	err = e.exclusive(ctx, func(t *txn) error {
		aside = ""
		src := snap.Ino
		for _, n := range splitPath(sub) {
			if src, _, err = t.lookup(src, n); err != nil {
				return err
			}
		}
		parent, err := t.resolvePath(strings.Join(target[:len(target)-1], "/"))
		if err != nil {
			return fmt.Errorf("the directory to restore into is gone (%w): recreate %s first", err, "/"+strings.Join(target[:len(target)-1], "/"))
		}
		p, err := t.dir(parent)
		if err != nil {
			return err
		}
		last := target[len(target)-1]
		if _, _, err := t.lookup(parent, last); err == nil {
			aside = fmt.Sprintf("%s.before-restore-%s", last, time.Unix(0, t.now).UTC().Format("20060102T150405Z"))
			if len(aside) > 255 {
				aside = aside[len(aside)-255:]
			}
			if _, err := t.rename(meta.RenameRequest{OldParent: parent, OldName: last, NewParent: parent, NewName: aside, Flags: meta.RenameNoReplace}); err != nil {
				return fmt.Errorf("moving %s aside: %w", last, err)
			}
		} else if err != syscall.ENOENT {
			return err
		}
		a, err := t.attr(src)
		if err != nil {
			return err
		}
		c := newCopier(t, copyOpts{preserve: true})
		ino, err := c.copyTree(src, parent)
		if err != nil {
			return err
		}
		t.tx.Set(dentryKey(parent, last), encodeDentry(ino, a.Type))
		if a.Type == meta.TypeDir {
			p.Nlink++
			t.touch(parent)
		}
		t.touchDir(parent, p)
		t.space += c.space
		t.files += c.inodes
		return nil
	})
	return aside, wrap(err, "restore snapshot %q", name)
}
