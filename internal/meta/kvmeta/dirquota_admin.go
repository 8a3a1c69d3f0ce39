package kvmeta

import (
	"context"
	"slices"
	"syscall"

	"shoal/internal/meta"
)

var _ meta.Quotas = (*Engine)(nil)

// walkBatch is how many entries SetQuota's walk reads per transaction.
const walkBatch = 1000

// SetQuota implements meta.Quotas: it counts the tree (a paged walk, one
// transaction per batch of entries, so it sees no single snapshot of a
// busy tree), then writes the record and adds ino to the quota list.
func (e *Engine) SetQuota(ctx context.Context, ino meta.Ino, maxSpace, maxInodes uint64) (meta.Quota, error) {
	if _, err := e.quotaDir(ctx, ino); err != nil {
		return meta.Quota{}, err
	}
	space, files, err := e.treeUsage(ctx, ino)
	if err != nil {
		return meta.Quota{}, wrap(err, "count tree %d", ino)
	}
	q := meta.Quota{Ino: ino, MaxSpace: maxSpace, MaxInodes: maxInodes, UsedSpace: space, UsedInodes: files}
	var dirs []meta.Ino
	err = e.update(ctx, func(t *txn) error {
		if _, err := t.dir(ino); err != nil {
			return err
		}
		if dirs, err = t.quotaList(); err != nil {
			return err
		}
		if !slices.Contains(dirs, ino) {
			dirs = append(dirs, ino)
		}
		t.setQuotaList(dirs)
		t.tx.Set(quotaKey(ino), encodeQuota(q))
		return nil
	})
	if err != nil {
		return meta.Quota{}, wrap(err, "set quota %d", ino)
	}
	e.setQuotaDirs(dirs)
	return q, nil
}

// quotaDir checks that ino is a directory.
func (e *Engine) quotaDir(ctx context.Context, ino meta.Ino) (meta.Attr, error) {
	var a meta.Attr
	err := e.view(ctx, func(t *txn) error {
		d, err := t.dir(ino)
		if err == nil {
			a = *d
		}
		return err
	})
	return a, wrap(err, "quota dir %d", ino)
}

// treeUsage counts the space and inodes under directory root (a file
// with several links in the tree counts once).
func (e *Engine) treeUsage(ctx context.Context, root meta.Ino) (space, files uint64, err error) {
	seen := map[meta.Ino]bool{}
	dirs := []meta.Ino{root}
	for len(dirs) > 0 {
		dir := dirs[len(dirs)-1]
		dirs = dirs[:len(dirs)-1]
		after := ""
		for {
			ents, err := e.Readdir(ctx, dir, after, walkBatch, true)
			if err != nil {
				return 0, 0, err
			}
			for _, ent := range ents {
				if seen[ent.Ino] {
					continue
				}
				seen[ent.Ino] = true
				files++
				if ent.Attr != nil {
					space += uint64(spaceOf(ent.Attr))
				}
				if ent.Type == meta.TypeDir {
					dirs = append(dirs, ent.Ino)
				}
			}
			if len(ents) < walkBatch {
				break
			}
			after = ents[len(ents)-1].Name
		}
	}
	return space, files, nil
}

// GetQuota implements meta.Quotas.
func (e *Engine) GetQuota(ctx context.Context, ino meta.Ino) (meta.Quota, error) {
	var q meta.Quota
	err := e.view(ctx, func(t *txn) error {
		raw, err := t.tx.Get(quotaKey(ino))
		if err != nil {
			return err
		}
		var ok bool
		if q, ok = decodeQuota(ino, raw); !ok {
			return syscall.ENODATA
		}
		return nil
	})
	return q, wrap(err, "get quota %d", ino)
}

// ListQuotas implements meta.Quotas.
func (e *Engine) ListQuotas(ctx context.Context) ([]meta.Quota, error) {
	var out []meta.Quota
	err := e.view(ctx, func(t *txn) error {
		out = out[:0]
		dirs, err := t.quotaList()
		if err != nil {
			return err
		}
		slices.Sort(dirs)
		for _, d := range dirs {
			raw, err := t.tx.Get(quotaKey(d))
			if err != nil {
				return err
			}
			if q, ok := decodeQuota(d, raw); ok {
				out = append(out, q)
			}
		}
		return nil
	})
	return out, wrap(err, "list quotas")
}

// DeleteQuota implements meta.Quotas.
func (e *Engine) DeleteQuota(ctx context.Context, ino meta.Ino) error {
	var dirs []meta.Ino
	err := e.update(ctx, func(t *txn) error {
		raw, err := t.tx.Get(quotaKey(ino))
		if err != nil {
			return err
		}
		if raw == nil {
			return syscall.ENODATA
		}
		if dirs, err = t.quotaList(); err != nil {
			return err
		}
		dirs = slices.DeleteFunc(dirs, func(d meta.Ino) bool { return d == ino })
		t.setQuotaList(dirs)
		t.tx.Delete(quotaKey(ino))
		return nil
	})
	if err != nil {
		return wrap(err, "delete quota %d", ino)
	}
	e.setQuotaDirs(dirs)
	return nil
}

// StatfsAt implements meta.Quotas: the nearest quota at or above ino (a
// file's own directory for other types), else the volume's Statfs. A
// limit the quota leaves unset is the volume's.
func (e *Engine) StatfsAt(ctx context.Context, ino meta.Ino) (meta.Statfs, error) {
	vol, err := e.Statfs(ctx)
	quotas := e.quotaDirs()
	if err != nil || quotas == nil {
		return vol, err
	}
	var q meta.Quota
	var found bool
	err = e.view(ctx, func(t *txn) error {
		t.quotas = quotas
		a, err := t.attr(ino)
		if err != nil {
			return err
		}
		dir := ino
		if a.Type != meta.TypeDir {
			dir = a.Parent
		}
		near, err := t.nearestQuota(dir)
		if err != nil || near == 0 {
			return err
		}
		raw, err := t.tx.Get(quotaKey(near))
		q, found = decodeQuota(near, raw)
		return err
	})
	if err != nil || !found {
		return vol, wrap(err, "statfs at %d", ino)
	}
	st := vol
	st.UsedSpace, st.UsedInodes = q.UsedSpace, q.UsedInodes
	if q.MaxSpace > 0 {
		st.TotalSpace = q.MaxSpace
	}
	if q.MaxInodes > 0 {
		st.TotalInodes = q.MaxInodes
	}
	return st, nil
}
