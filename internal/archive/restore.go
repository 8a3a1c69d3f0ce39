package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"shoal/internal/backup"
	"shoal/internal/identity"
	"shoal/internal/meta"
	"shoal/internal/object"
	"shoal/internal/progress"
	"shoal/internal/volume"
)

// Target is where Restore makes the volume.
type Target struct {
	Engine  meta.Engine // empty; must be a meta.Dumper with RestoreEdited
	Storage string      // the new volume's object store: "file" or "s3"
	Bucket  string      // a directory or URL, not the backup's
	Name    string      // the new volume's name ("" keeps the backup's)
}

// ErrSameStore refuses a restore whose bucket is the backup's store.
var ErrSameStore = errors.New("the restored volume's bucket must not be the backup destination")

// editRestorer is an engine that restores a dump with edited settings
// (kvmeta.Engine.RestoreEdited).
type editRestorer interface {
	RestoreEdited(ctx context.Context, r io.Reader, edit func(*meta.Format) error) error
}

// Restore makes a new volume from backup m: it copies the blocks the dump
// references from dest into the target bucket (those present there with a
// right size are kept, so an interrupted restore can be run again into
// the same bucket and an emptied engine), restores the dump with the new
// storage, bucket and a new uuid, written last, and claims the bucket.
// destWhere is dest's storage and location, to refuse the same store as
// the target.
func Restore(ctx context.Context, dest object.Store, destWhere [2]string, m Manifest, t Target, secret volume.Secret, jobs int, p *progress.Progress) (meta.Format, error) {
	if p == nil {
		p = &progress.Progress{}
	}
	if sameStore(destWhere, [2]string{t.Storage, t.Bucket}) {
		return meta.Format{}, ErrSameStore
	}
	er, ok := t.Engine.(editRestorer)
	if !ok {
		return meta.Format{}, errors.New("this metadata engine cannot restore dumps")
	}
	p.Set("reading the dump", 0, 0)
	f, err := fetchDump(ctx, dest, m, secret)
	if err != nil {
		return meta.Format{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	_, slices, err := dumpSlices(f)
	if err != nil {
		return meta.Format{}, err
	}
	store, err := volume.OpenStore(ctx, t.Storage, t.Bucket, nil)
	if err != nil {
		return meta.Format{}, err
	}
	if claims, err := identity.List(ctx, store); err != nil || len(claims) > 0 {
		if err == nil {
			err = fmt.Errorf("object store %s is claimed by a volume already (%s): restore into a new bucket (or directory)", store, claims[0])
		}
		return meta.Format{}, err
	}
	if err := restoreBlocks(ctx, dest, store, m.Format, slices, jobs, p); err != nil {
		return meta.Format{}, err
	}
	p.Set("restoring the metadata", 0, 0)
	plain, err := backup.Decompress(f)
	if err != nil {
		return meta.Format{}, err
	}
	defer plain.Close()
	var vf meta.Format
	err = er.RestoreEdited(ctx, plain, func(nf *meta.Format) error {
		nf.UUID, nf.Storage, nf.Bucket = volume.NewUUID(), t.Storage, t.Bucket
		if t.Name != "" {
			nf.Name = t.Name
		}
		vf = *nf
		return nil
	})
	if err != nil {
		return vf, err
	}
	if err := restoreQuotas(ctx, t.Engine, m.Quotas); err != nil {
		return vf, err
	}
	c := identity.For(vf, identity.HowRestore)
	c.Origin = m.UUID
	if err := identity.Put(ctx, store, c); err != nil {
		return vf, fmt.Errorf("the volume is restored, but claiming its bucket failed (its first mount claims it): %w", err)
	}
	return vf, nil
}

// restoreQuotas sets the backup's directory quotas again on the restored
// tree, which counts each one's usage.
func restoreQuotas(ctx context.Context, eng meta.Engine, qs []QuotaLimit) error {
	if len(qs) == 0 {
		return nil
	}
	q, ok := eng.(meta.Quotas)
	if !ok {
		return errors.New("the backup has directory quotas, and this metadata engine has none")
	}
	for _, x := range qs {
		ino, err := meta.ResolvePath(ctx, eng, x.Path)
		if err == nil {
			_, err = q.SetQuota(ctx, ino, x.MaxSpace, x.MaxInodes)
		}
		if err != nil {
			return fmt.Errorf("setting the quota of %s again: %w", x.Path, err)
		}
	}
	return nil
}

// restoreBlocks copies the blocks of slices from dest into store.
func restoreBlocks(ctx context.Context, dest, store object.Store, f meta.Format, slices map[meta.SliceID]uint32, jobs int, p *progress.Progress) error {
	p.Set("listing blocks", 0, 0)
	blocks := blocksOf(slices, f.BlockSize)
	present, err := listBlocks(ctx, store)
	if err != nil {
		return err
	}
	todo := missing(blocks, present, f)
	p.Set("copying blocks", 0, int64(len(todo)))
	_, err = copyBlocks(ctx, dest, store, todo, jobs, p, nil)
	return err
}

// sameStore reports whether two (storage, bucket) pairs name one store.
func sameStore(a, b [2]string) bool {
	if a[0] != b[0] {
		return false
	}
	if a[0] == "file" {
		x, err1 := filepath.Abs(a[1])
		y, err2 := filepath.Abs(b[1])
		return err1 == nil && err2 == nil && filepath.Clean(x) == filepath.Clean(y)
	}
	return strings.TrimSuffix(a[1], "/") == strings.TrimSuffix(b[1], "/")
}
