package kvmeta

import (
	"context"
	"slices"
	"syscall"

	"shoal/internal/meta"
)

// Directory quotas (meta.Quotas) limit the space and inodes of the tree
// under a directory, the directory itself not counted.
//
// Records: 'U' ino holds the quota's limits and the tree's usage, changed
// in the transaction of every operation that changes the tree's usage, so
// a directory quota is exact (no overshoot) once every client knows it;
// the counter "quotaDirs" lists the directories that carry one.
//
// Finding the quotas above an inode: every new inode records its parent
// in Attr.Parent (before, only directories did), and a rename moves it.
// A hard-linked file counts under the directory it was created in (or
// last renamed into); links and renames between trees under different
// quotas are refused with EXDEV, as CephFS and XFS project quotas do, so
// usage never has to move between quotas (mv falls back to copy and
// delete). A file made before this release (Parent 0) counts under no
// directory quota until it is renamed.
//
// Cost: each client keeps the set of quota directories in memory, read
// from "quotaDirs" (one key) at Load and every quotaRefresh, and at once
// after its own SetQuota and DeleteQuota. An operation on a volume with no
// directory quota does nothing more; with some, an operation that changes
// usage reads the attributes of its directory's ancestors (cached within
// the transaction) and writes the records of the quotas it meets. A quota
// set on one client is enforced by the others within quotaRefresh;
// changes they make in that window are not counted, and SetQuota on a
// busy tree counts what its walk saw. Setting the quota again recounts.

// quotaRefresh is how often a client re-reads the list of quota
// directories: every quotaRefresh flush ticks.
const quotaRefresh = 3

// counterQuotaDirs lists the directories with a quota (8 bytes each).
const counterQuotaDirs = "quotaDirs"

func quotaKey(ino meta.Ino) []byte { return inoKey(kindQuota, ino) }

func encodeQuota(q meta.Quota) []byte {
	b := be.AppendUint64(nil, q.MaxSpace)
	b = be.AppendUint64(b, q.MaxInodes)
	b = be.AppendUint64(b, q.UsedSpace)
	return be.AppendUint64(b, q.UsedInodes)
}

func decodeQuota(ino meta.Ino, b []byte) (meta.Quota, bool) {
	if len(b) != 32 {
		return meta.Quota{}, false
	}
	return meta.Quota{Ino: ino, MaxSpace: be.Uint64(b), MaxInodes: be.Uint64(b[8:]),
		UsedSpace: be.Uint64(b[16:]), UsedInodes: be.Uint64(b[24:])}, true
}

// quotaCharge is a usage change of the tree above dir.
type quotaCharge struct {
	dir          meta.Ino
	space, files int64
}

// charge records a usage change under dir, when the volume has directory
// quotas (t.quotas set): applied and checked before the commit.
func (t *txn) charge(dir meta.Ino, space, files int64) {
	if t.quotas != nil && dir != 0 && (space != 0 || files != 0) {
		t.charges = append(t.charges, quotaCharge{dir, space, files})
	}
}

// quotaDirs returns this client's set of quota directories (nil: none).
func (e *Engine) quotaDirs() map[meta.Ino]bool {
	if p := e.qdirs.Load(); p != nil {
		return *p
	}
	return nil
}

// refreshQuotas re-reads the list of quota directories.
func (e *Engine) refreshQuotas(ctx context.Context) error {
	var dirs []meta.Ino
	err := e.view(ctx, func(t *txn) error {
		var err error
		dirs, err = t.quotaList()
		return err
	})
	if err != nil {
		return wrap(err, "read quota list")
	}
	e.setQuotaDirs(dirs)
	return nil
}

func (e *Engine) setQuotaDirs(dirs []meta.Ino) {
	if len(dirs) == 0 {
		e.qdirs.Store(nil)
		return
	}
	m := make(map[meta.Ino]bool, len(dirs))
	for _, d := range dirs {
		m[d] = true
	}
	e.qdirs.Store(&m)
}

func (t *txn) quotaList() ([]meta.Ino, error) {
	raw, err := t.tx.Get(counterKey(counterQuotaDirs))
	var dirs []meta.Ino
	for i := 0; i+8 <= len(raw); i += 8 {
		dirs = append(dirs, meta.Ino(be.Uint64(raw[i:])))
	}
	return dirs, err
}

func (t *txn) setQuotaList(dirs []meta.Ino) {
	var b []byte
	for _, d := range dirs {
		b = be.AppendUint64(b, uint64(d))
	}
	if len(b) == 0 {
		t.tx.Delete(counterKey(counterQuotaDirs))
		return
	}
	t.tx.Set(counterKey(counterQuotaDirs), b)
}

// quotasAbove returns the quota directories at and above dir, nearest
// first, following Attr.Parent. A missing ancestor ends the walk.
func (t *txn) quotasAbove(dir meta.Ino) ([]meta.Ino, error) {
	var out []meta.Ino
	for hops := 0; dir != 0 && hops < 1<<16; hops++ {
		if t.quotas[dir] {
			out = append(out, dir)
		}
		if dir == meta.RootIno {
			break
		}
		a, err := t.attr(dir)
		if err == syscall.ENOENT {
			break
		}
		if err != nil {
			return nil, err
		}
		dir = a.Parent
	}
	return out, nil
}

// nearestQuota returns the nearest quota directory at or above dir (0:
// none).
func (t *txn) nearestQuota(dir meta.Ino) (meta.Ino, error) {
	qs, err := t.quotasAbove(dir)
	if len(qs) == 0 || err != nil {
		return 0, err
	}
	return qs[0], nil
}

// checkQuotaMove refuses with EXDEV a rename or link between directories
// under different quotas.
func (t *txn) checkQuotaMove(from, to meta.Ino) error {
	if t.quotas == nil || from == to {
		return nil
	}
	a, err := t.nearestQuota(from)
	if err != nil {
		return err
	}
	b, err := t.nearestQuota(to)
	if err != nil {
		return err
	}
	if a != b {
		return syscall.EXDEV
	}
	return nil
}

// applyDirQuotas adds the operation's charges to the quotas above them,
// refusing with EDQUOT growth past a limit, and drops the records of
// quota directories the operation deleted.
func (t *txn) applyDirQuotas() error {
	if t.quotas == nil {
		return nil
	}
	sums := map[meta.Ino]quotaCharge{}
	for _, c := range t.charges {
		qs, err := t.quotasAbove(c.dir)
		if err != nil {
			return err
		}
		for _, q := range qs {
			s := sums[q]
			s.space += c.space
			s.files += c.files
			sums[q] = s
		}
	}
	for q, s := range sums {
		if err := t.chargeQuota(q, s); err != nil {
			return err
		}
	}
	return t.dropDeletedQuotas()
}

// chargeQuota adds s to quota q's usage: EDQUOT if it grows past a limit.
func (t *txn) chargeQuota(q meta.Ino, s quotaCharge) error {
	raw, err := t.tx.Get(quotaKey(q))
	if err != nil {
		return err
	}
	rec, ok := decodeQuota(q, raw)
	if !ok {
		return nil // deleted since this client's list was read
	}
	space := int64(rec.UsedSpace) + s.space
	files := int64(rec.UsedInodes) + s.files
	if (s.space > 0 && rec.MaxSpace > 0 && space > int64(rec.MaxSpace)) ||
		(s.files > 0 && rec.MaxInodes > 0 && files > int64(rec.MaxInodes)) {
		return syscall.EDQUOT
	}
	rec.UsedSpace, rec.UsedInodes = uint64(max(space, 0)), uint64(max(files, 0))
	t.tx.Set(quotaKey(q), encodeQuota(rec))
	return nil
}

// dropDeletedQuotas removes the quota of a directory deleted here.
func (t *txn) dropDeletedQuotas() error {
	var gone []meta.Ino
	for ino := range t.dropped {
		if t.quotas[ino] {
			gone = append(gone, ino)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	dirs, err := t.quotaList()
	if err != nil {
		return err
	}
	for _, ino := range gone {
		t.tx.Delete(quotaKey(ino))
		dirs = slices.DeleteFunc(dirs, func(d meta.Ino) bool { return d == ino })
	}
	t.setQuotaList(dirs)
	return nil
}
