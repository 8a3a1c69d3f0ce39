package kvmeta

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"syscall"
	"time"

	"shoal/internal/meta"
)

var _ meta.Trash = (*Engine)(nil)

// SetTrashDays rewrites Format.TrashDays in the stored settings.
func (e *Engine) SetTrashDays(ctx context.Context, days int) error {
	if days < 0 {
		return syscall.EINVAL
	}
	var f meta.Format
	err := e.update(ctx, func(t *txn) error {
		var err error
		if f, err = t.format(); err != nil {
			return err
		}
		f.TrashDays = days
		raw, err := json.Marshal(f)
		if err != nil {
			return err
		}
		t.tx.Set(formatKey(), raw)
		return nil
	})
	if err != nil {
		return wrap(err, "set trash days")
	}
	e.setFormat(f)
	return nil
}

// trashRoot finds /.trash: ENOENT if there is none.
func (t *txn) trashRoot() (meta.Ino, *meta.Attr, error) {
	ino, typ, err := t.lookup(meta.RootIno, meta.TrashName)
	if err != nil {
		return 0, nil, err
	}
	if typ != meta.TypeDir {
		return 0, nil, syscall.ENOENT
	}
	a, err := t.attr(ino)
	return ino, a, err
}

// trashHours lists the hour directories of the trash, by name.
func (e *Engine) trashHours(ctx context.Context) (meta.Ino, []meta.DirEntry, error) {
	var trash meta.Ino
	var hours []meta.DirEntry
	err := e.view(ctx, func(t *txn) error {
		var err error
		if trash, _, err = t.trashRoot(); err != nil {
			return err
		}
		hours, err = t.entries(trash, 0)
		return err
	})
	if err == syscall.ENOENT {
		return 0, nil, nil
	}
	return trash, hours, err
}

// entries returns up to limit (0: all) entries of directory dir.
func (t *txn) entries(dir meta.Ino, limit int) ([]meta.DirEntry, error) {
	var out []meta.DirEntry
	var bad error
	err := t.tx.Scan(inoKey(kindDentry, dir), nil, limit, func(key, value []byte) bool {
		ino, typ, err := decodeDentry(value)
		if err != nil {
			bad = err
			return false
		}
		out = append(out, meta.DirEntry{Name: string(key[9:]), Ino: ino, Type: typ})
		return true
	})
	if err == nil {
		err = bad
	}
	return out, err
}

// ListTrash reads the trash one hour directory per transaction.
func (e *Engine) ListTrash(ctx context.Context) ([]meta.TrashEntry, error) {
	_, hours, err := e.trashHours(ctx)
	if err != nil {
		return nil, wrap(err, "list trash")
	}
	var out []meta.TrashEntry
	for _, h := range hours {
		if h.Type != meta.TypeDir {
			continue
		}
		err := e.view(ctx, func(t *txn) error {
			ents, err := t.entries(h.Ino, 0)
			for _, ent := range ents {
				if err != nil {
					break
				}
				var a *meta.Attr
				if a, err = t.attr(ent.Ino); err == nil {
					te := trashEntry(h.Name, ent, a)
					te.OrigName, err = t.trashedName(ent.Ino, te.OrigName)
					out = append(out, te)
				}
			}
			return err
		})
		if err != nil {
			return nil, wrap(err, "list trash %s", h.Name)
		}
	}
	return out, nil
}

func trashEntry(hour string, ent meta.DirEntry, a *meta.Attr) meta.TrashEntry {
	te := meta.TrashEntry{Hour: hour, Name: ent.Name, Ino: ent.Ino, Type: a.Type, Size: a.Length, Deleted: a.Ctime}
	if parent, _, name, ok := parseTrashName(ent.Name); ok {
		te.Parent, te.OrigName = parent, name
	}
	return te
}

// RestoreTrash puts one entry back, in one transaction.
func (e *Engine) RestoreTrash(ctx context.Context, hour, name string) (meta.Restored, error) {
	var r meta.Restored
	err := e.update(ctx, func(t *txn) error {
		var err error
		r, err = t.restore(hour, name)
		return err
	})
	return r, wrap(err, "restore %s/%s", hour, name)
}

func (t *txn) restore(hour, name string) (meta.Restored, error) {
	trash, _, err := t.trashRoot()
	if err != nil {
		return meta.Restored{}, err
	}
	hourIno, _, err := t.lookup(trash, hour)
	if err != nil {
		return meta.Restored{}, err
	}
	h, err := t.dir(hourIno)
	if err != nil {
		return meta.Restored{}, err
	}
	ino, typ, err := t.lookup(hourIno, name)
	if err != nil {
		return meta.Restored{}, err
	}
	a, err := t.attr(ino)
	if err != nil {
		return meta.Restored{}, err
	}
	r, d, err := t.restorePlace(name, ino)
	if err != nil {
		return meta.Restored{}, err
	}
	if t.flags[ino]&flagXattrs != 0 {
		t.tx.Delete(xattrKey(ino, trashNameXattr))
	}
	t.tx.Delete(dentryKey(hourIno, name))
	t.touchDir(hourIno, h)
	t.tx.Set(dentryKey(r.Parent, r.Name), encodeDentry(ino, typ))
	t.touchDir(r.Parent, d)
	t.reparent(a, r.Parent)
	a.Ctime = t.now
	t.touch(ino)
	return r, nil
}

// restorePlace chooses where an entry goes back: its original parent and
// name when the parent is still a live directory outside the trash and
// the name is free; else, with Moved and a Reason, "<name>.restored-<ino>"
// in that parent (name taken) or in the root (parent gone).
func (t *txn) restorePlace(entry string, ino meta.Ino) (meta.Restored, *meta.Attr, error) {
	parent, _, name, ok := parseTrashName(entry)
	if ok {
		var err error
		if name, err = t.trashedName(ino, name); err != nil {
			return meta.Restored{}, nil, err
		}
	}
	r := meta.Restored{Parent: parent, Name: name}
	d, err := t.dir(parent)
	switch {
	case !ok:
		r = meta.Restored{Parent: meta.RootIno, Name: entry, Moved: true, Reason: "the entry name does not say where it came from"}
	case err == syscall.ENOENT || err == syscall.ENOTDIR || err == nil && (d.Nlink == 0 || t.flags[parent]&flagTrash != 0):
		r = meta.Restored{Parent: meta.RootIno, Name: name, Moved: true, Reason: fmt.Sprintf("its directory (inode %d) is gone", parent)}
	case err != nil:
		return r, nil, err
	}
	if r.Moved {
		if d, err = t.dir(meta.RootIno); err != nil {
			return r, nil, err
		}
	}
	free, err := t.isFree(r.Parent, r.Name)
	if err != nil || (free && !r.Moved) {
		return r, d, err
	}
	if !r.Moved {
		r.Moved, r.Reason = true, "the name is taken"
	}
	r.Name, err = t.freeName(r.Parent, r.Name, ino)
	return r, d, err
}

// isFree reports whether dir has no entry name.
func (t *txn) isFree(dir meta.Ino, name string) (bool, error) {
	_, _, err := t.lookup(dir, name)
	if err == syscall.ENOENT {
		return true, nil
	}
	return false, err
}

// freeName finds a free alternative to name in dir: name.restored-<ino>,
// then with -2, -3, … appended, cut to fit meta.MaxNameLen.
func (t *txn) freeName(dir meta.Ino, name string, ino meta.Ino) (string, error) {
	base := ".restored-" + strconv.FormatUint(uint64(ino), 10)
	for i := 1; i < 100; i++ {
		suffix := base
		if i > 1 {
			suffix += "-" + strconv.Itoa(i)
		}
		cand := cutName(name, meta.MaxNameLen-len(suffix)) + suffix
		free, err := t.isFree(dir, cand)
		if err != nil || free {
			return cand, err
		}
	}
	return "", syscall.EEXIST
}

// emptyBatch is how many trash entries one transaction deletes.
const emptyBatch = 128

// ExpireTrash empties the hours older than the cached TrashDays.
func (e *Engine) ExpireTrash(ctx context.Context, now time.Time) (int, error) {
	days := e.trashDays.Load()
	if days <= 0 {
		return 0, nil
	}
	return e.EmptyTrash(ctx, now.Add(-time.Duration(days)*24*time.Hour))
}

// EmptyTrash deletes the hour directories that ended by before.
func (e *Engine) EmptyTrash(ctx context.Context, before time.Time) (int, error) {
	trash, hours, err := e.trashHours(ctx)
	if err != nil {
		return 0, wrap(err, "empty trash")
	}
	total := 0
	for _, h := range hours {
		start, ok := meta.TrashHour(h.Name)
		if h.Type != meta.TypeDir || !ok || start.Add(time.Hour).After(before) {
			continue
		}
		n, err := e.emptyHour(ctx, trash, h)
		total += n
		if err != nil {
			return total, wrap(err, "empty trash %s", h.Name)
		}
	}
	return total, nil
}

// emptyHour deletes one hour directory's entries, a batch per
// transaction, then the directory. Orphans (files still open somewhere)
// are purged when no client holds them.
func (e *Engine) emptyHour(ctx context.Context, trash meta.Ino, h meta.DirEntry) (int, error) {
	total := 0
	for {
		var n int
		var orphans []meta.Ino
		err := e.update(ctx, func(t *txn) error {
			var err error
			n, orphans, err = t.emptyBatch(trash, h)
			return err
		})
		if err != nil {
			return total, err
		}
		total += n
		for _, ino := range orphans {
			if err := e.Purge(ctx, ino); err != nil {
				return total, err
			}
		}
		if n == 0 {
			return total, nil
		}
	}
}

// emptyBatch deletes up to emptyBatch entries of hour directory h, and h
// itself once it is empty. Entries that are not files or symlinks (an
// administrator's mkdir in a taken-over /.trash) are left alone.
func (t *txn) emptyBatch(trash meta.Ino, h meta.DirEntry) (int, []meta.Ino, error) {
	d, err := t.dir(h.Ino)
	if err == syscall.ENOENT {
		return 0, nil, nil // emptied by another client
	}
	if err != nil {
		return 0, nil, err
	}
	ents, err := t.entries(h.Ino, emptyBatch)
	if err != nil {
		return 0, nil, err
	}
	n, kept := 0, 0
	var orphans []meta.Ino
	for _, ent := range ents {
		if ent.Type == meta.TypeDir {
			kept++
			continue
		}
		a, err := t.attr(ent.Ino)
		if err != nil {
			return 0, nil, err
		}
		rm, err := t.dropLink(ent.Ino, a)
		if err != nil {
			return 0, nil, err
		}
		if rm.Orphan {
			orphans = append(orphans, ent.Ino)
		}
		t.tx.Delete(dentryKey(h.Ino, ent.Name))
		n++
	}
	if n > 0 {
		t.touchDir(h.Ino, d)
		return n, orphans, nil
	}
	if kept == 0 {
		ta, err := t.dir(trash)
		if err != nil {
			return 0, nil, err
		}
		return 0, nil, t.removeDir(trash, ta, h.Name, h.Ino, d)
	}
	return 0, nil, nil
}
