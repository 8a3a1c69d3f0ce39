package kvmeta

import (
	"context"
	"fmt"
	"syscall"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// Lookup reads the entry and the child's attributes. The parent is used
// only when the caller needs a permission check or the name is missing
// (to tell ENOTDIR and a missing parent from a missing name). All three
// are read ahead in one request where the store can (kv.ViewAhead), the
// child's attributes named by the entry's value (followEntry).
func (e *Engine) Lookup(ctx context.Context, parent meta.Ino, name string) (meta.Entry, error) {
	if len(name) > meta.MaxNameLen {
		return meta.Entry{}, wrap(syscall.ENAMETOOLONG, "lookup %d/%q", parent, name)
	}
	follow := followEntry(parent, name)
	if meta.CredFrom(ctx).Trusted && kv.KnownAbsent(ctx, e.store, follow.From) {
		// Absent, known from the store's cache (a name in a directory
		// this client created, not changed since: kv.AbsentKnower). A
		// trusted caller needs no permission check, and the prefix is
		// known only for a directory, so ENOENT is the whole answer.
		return meta.Entry{}, syscall.ENOENT
	}
	var ent meta.Entry
	err := e.viewAhead(ctx, &follow, [][]byte{attrKey(parent)}, func(t *txn) error {
		if err := t.prefetchEntry(parent, name); err != nil {
			return err
		}
		if !t.cred.Trusted {
			if _, err := t.dirFor(parent, meta.MayExec); err != nil {
				return err
			}
		}
		ino, _, err := t.lookup(parent, name)
		if err == syscall.ENOENT && t.cred.Trusted {
			if _, derr := t.dir(parent); derr != nil {
				return derr
			}
		}
		if err != nil {
			return err
		}
		a, err := t.attr(ino)
		if err != nil {
			return err
		}
		ent = meta.Entry{Ino: ino, Attr: *a}
		return nil
	})
	return ent, wrap(err, "lookup %d/%q", parent, name)
}

// Getattr reads one attr record.
func (e *Engine) Getattr(ctx context.Context, ino meta.Ino) (meta.Attr, error) {
	// One key: a point read where the store has one (no BEGIN/COMMIT).
	raw, err := kv.GetOne(ctx, e.store, attrKey(ino))
	var a meta.Attr
	if err == nil {
		a, err = attrOf(raw)
	}
	return a, wrap(err, "getattr %d", ino)
}

// Setattr applies meta.ApplySetattr's rules; a chmod is carried into the
// access ACL, if there is one.
func (e *Engine) Setattr(ctx context.Context, ino meta.Ino, req meta.SetattrRequest) (meta.Attr, error) {
	var out meta.Attr
	err := e.update(ctx, func(t *txn) error {
		a, err := t.attr(ino)
		if err != nil {
			return err
		}
		if req.Valid == 0 {
			out = *a
			return nil
		}
		changed, err := meta.ApplySetattr(t.cred, *a, req, t.now)
		if err != nil {
			return err
		}
		*a = changed
		t.touch(ino)
		out = changed
		if req.Valid&meta.SetMode != 0 {
			return t.chmodACL(ino, a)
		}
		return nil
	})
	return out, wrap(err, "setattr %d", ino)
}

// Access applies meta.CheckACLAccess: the access ACL, or the mode.
func (e *Engine) Access(ctx context.Context, ino meta.Ino, mask uint32) error {
	err := e.viewAhead(ctx, nil, [][]byte{attrKey(ino)}, func(t *txn) error {
		a, err := t.attr(ino)
		if err != nil {
			return err
		}
		return t.access(ino, a, mask&7)
	})
	return wrap(err, "access %d", ino)
}

// Readlink reads the target record of a symlink.
func (e *Engine) Readlink(ctx context.Context, ino meta.Ino) (string, error) {
	var target string
	err := e.viewAhead(ctx, nil, [][]byte{symlinkKey(ino), attrKey(ino)}, func(t *txn) error {
		raw, err := t.tx.Get(symlinkKey(ino))
		if err != nil {
			return err
		}
		if raw != nil {
			target = string(raw)
			return nil
		}
		if _, err := t.attr(ino); err != nil {
			return err
		}
		return syscall.EINVAL
	})
	return target, wrap(err, "readlink %d", ino)
}

// Readdir scans the directory's entries after the given name: one ordered
// scan of at most limit keys under the 9-byte prefix 'D'+ino, plus, when
// plus is set, the entries' attributes in one batch (fillAttrs: one round
// trip per batch where the backend reads many keys at once). limit <= 0
// returns all entries. Where the store reads a scan ahead
// (kv.ScanPrefetcher: Redis), the directory's attributes, the page and,
// with plus, the attributes its entries name are read together: one round
// trip for a page with attributes or of up to 256 names, two or three for
// a bigger page of names only (rediskv's doc has how).
// Permission to read the directory is checked when it is opened (Access),
// as for read(2) on an open descriptor.
func (e *Engine) Readdir(ctx context.Context, ino meta.Ino, after string, limit int, plus bool) ([]meta.DirEntry, error) {
	var out []meta.DirEntry
	err := e.view(ctx, func(t *txn) error {
		out = out[:0]
		prefix := inoKey(kindDentry, ino)
		ahead := kv.ScanAhead{Prefix: prefix, After: []byte(after), Limit: limit}
		if plus {
			// An entry's value begins with the child's inode number.
			ahead.FollowPrefix, ahead.FollowLen = []byte{kindAttr}, 8
		}
		if err := kv.PrefetchScan(t.tx, ahead, attrKey(ino)); err != nil {
			return err
		}
		if _, err := t.dir(ino); err != nil {
			return err
		}
		var derr error
		var names []byte // the page's names, made one string below
		ends := make([]int, 0, min(max(limit, 0), 256))
		err := t.tx.Scan(prefix, []byte(after), limit, func(key, value []byte) bool {
			child, typ, err := decodeDentry(value)
			if err != nil {
				derr = err
				return false
			}
			names = append(names, key[len(prefix):]...)
			ends = append(ends, len(names))
			out = append(out, meta.DirEntry{Ino: child, Type: typ})
			return true
		})
		if err != nil || derr != nil {
			return firstErr(err, derr)
		}
		// One allocation for the names of a page, not one a name.
		joined, start := string(names), 0
		for i, end := range ends {
			out[i].Name, start = joined[start:end], end
		}
		if !plus {
			return nil
		}
		return t.fillAttrs(out)
	})
	if err != nil {
		return nil, wrap(err, "readdir %d after %q", ino, after)
	}
	return out, nil
}

// fillAttrs reads each entry's attributes, in one round trip per batch
// where the backend can (kv.GetMany). An entry whose inode vanished would
// be a broken volume; it is reported rather than hidden.
func (t *txn) fillAttrs(ents []meta.DirEntry) error {
	keys := make([][]byte, len(ents))
	for i, e := range ents {
		keys[i] = attrKey(e.Ino)
	}
	raws, err := kv.GetMany(t.tx, keys)
	if err != nil {
		return err
	}
	for i, raw := range raws {
		if raw == nil {
			return fmt.Errorf("entry %q points to missing inode %d", ents[i].Name, ents[i].Ino)
		}
		a, err := decodeAttr(raw)
		if err != nil {
			return err
		}
		ents[i].Attr = &a
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
