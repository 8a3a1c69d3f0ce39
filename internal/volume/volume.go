package volume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"shoal/internal/data"
	"shoal/internal/identity"
	"shoal/internal/meta"
	"shoal/internal/meta/kv/kvopen"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/object"
	"shoal/internal/object/objopen"
	"shoal/internal/vfs"
)

// Options tune an opened volume.
type Options struct {
	Data   data.Config // BlockSize is taken from the volume format
	VFS    vfs.Config
	Logger *slog.Logger
}

// Volume is an opened volume with all its layers.
type Volume struct {
	Format  meta.Format
	Engine  meta.Engine
	Objects object.Store // the block store (BlockStore): checksummed, compressed if the format says, retrying
	// Plain is the same store without block checksums (retrying), for
	// objects that are not blocks, such as metadata backups.
	Plain object.Store
	Data  *data.Store
	FS    *vfs.FS
}

// OpenEngine connects to the metadata engine named by metaURL.
func OpenEngine(ctx context.Context, metaURL string) (meta.Engine, error) {
	store, err := kvopen.Open(ctx, metaURL)
	if err != nil {
		return nil, err
	}
	return kvmeta.New(store, kvmeta.Options{}), nil
}

// Load opens the engine and reads the volume settings, explaining what to
// do when there is no volume.
func Load(ctx context.Context, metaURL string) (meta.Engine, meta.Format, error) {
	eng, err := OpenEngine(ctx, metaURL)
	if err != nil {
		return nil, meta.Format{}, err
	}
	f, err := eng.Load(ctx)
	if err != nil {
		_ = eng.Close()
		if errors.Is(err, meta.ErrNotFormatted) {
			return nil, meta.Format{}, fmt.Errorf("no volume at %s: %w (create one with 'shoal format %s')", redact(metaURL), err, redact(metaURL))
		}
		return nil, meta.Format{}, fmt.Errorf("loading volume at %s: %w", redact(metaURL), err)
	}
	return eng, f, nil
}

// Open opens the volume at metaURL with all its layers.
func Open(ctx context.Context, metaURL string, opts Options) (*Volume, error) {
	eng, f, err := Load(ctx, metaURL)
	if err != nil {
		return nil, err
	}
	objects, err := objopen.Open(ctx, f.Storage, f.Bucket)
	if err != nil {
		_ = eng.Close()
		return nil, fmt.Errorf("opening the volume's object store (%s %s): %w", f.Storage, f.Bucket, err)
	}
	// Retries sit under the checksums: a block is verified as it arrives
	// from whichever attempt delivered it. Every volume checksums its
	// blocks (docs/format.md); BlockStore adds compression below them.
	plain := object.WithRetry(objects, 5, 100*time.Millisecond)
	claims, err := identity.Check(ctx, plain, f)
	if err != nil {
		_ = eng.Close()
		return nil, fmt.Errorf("opening volume %q: %w", f.Name, err)
	}
	if len(claims) > 1 && opts.Logger != nil {
		opts.Logger.Warn("the bucket is shared with another volume: this mount deletes no objects while it is", "claims", len(claims))
	}
	if objects, err = BlockStore(plain, f); err != nil {
		_ = eng.Close()
		return nil, err
	}
	dc := opts.Data
	dc.BlockSize = f.BlockSize
	if dc.Logger == nil {
		dc.Logger = opts.Logger
	}
	if opts.VFS.Logger == nil {
		opts.VFS.Logger = opts.Logger
	}
	if opts.VFS.MayDelete == nil {
		opts.VFS.MayDelete = func(ctx context.Context) error { return identity.Exclusive(ctx, plain, f) }
	}
	store := data.New(objects, dc)
	return &Volume{Format: f, Engine: eng, Objects: objects, Plain: plain, Data: store, FS: vfs.New(eng, store, opts.VFS)}, nil
}

// Close flushes and closes every layer.
func (v *Volume) Close(ctx context.Context) error {
	return errors.Join(v.FS.Close(ctx), v.Data.Close(), v.Engine.Close())
}
