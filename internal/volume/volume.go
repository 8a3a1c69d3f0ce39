package volume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"shoal/internal/data"
	"shoal/internal/identity"
	"shoal/internal/meta"
	"shoal/internal/meta/kv/kvopen"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/object"
	"shoal/internal/secret"
	"shoal/internal/vfs"
)

// Options tune an opened volume.
type Options struct {
	Data   data.Config // BlockSize is taken from the volume format
	VFS    vfs.Config
	Logger *slog.Logger
	Secret Secret // the secret of an encrypted volume (unused on a plain one)
	// StoreHook wraps the object store's backend under the retries and
	// hears of each retry (OpenStore); mounts hook their metrics in here.
	StoreHook StoreHook
}

// Volume is an opened volume with all its layers.
type Volume struct {
	Format  meta.Format
	Engine  meta.Engine
	Objects object.Store // the block store (BlockStore): checksummed, compressed if the format says, retrying
	// Plain is the same store without block checksums (retrying), for
	// objects that are not blocks, such as identity claims.
	Plain object.Store
	// Sealed is Plain, encrypted on an encrypted volume, with deletes
	// guarded (identity.Guard): for objects that are not blocks but hold
	// the volume's contents (metadata backups).
	Sealed object.Store
	Data   *data.Store
	FS     *vfs.FS
}

// OpenEngine connects to the metadata engine named by metaURL.
func OpenEngine(ctx context.Context, metaURL string) (meta.Engine, error) {
	store, err := kvopen.Open(ctx, metaURL)
	if err != nil {
		return nil, err
	}
	return kvmeta.New(store, kvmeta.Options{ClockSkew: testClockSkew()}), nil
}

// ClockSkewEnv names the test hook that shifts a client's wall clock
// (kvmeta.Options.ClockSkew), as on a machine whose clock is off: a Go
// duration such as -1h. For tests only; not a user setting.
const ClockSkewEnv = "SHOAL_TEST_CLOCK_SKEW"

// testClockSkew reads ClockSkewEnv; unset or malformed means none.
func testClockSkew() time.Duration {
	d, _ := time.ParseDuration(os.Getenv(ClockSkewEnv))
	return d
}

// Load opens the engine and reads the volume settings, explaining what to
// do when there is no volume.
func Load(ctx context.Context, metaURL string) (meta.Engine, meta.Format, error) {
	if err := missingSQLite(metaURL); err != nil {
		return nil, meta.Format{}, err
	}
	eng, err := OpenEngine(ctx, metaURL)
	if err != nil {
		return nil, meta.Format{}, err
	}
	f, err := eng.Load(ctx)
	if err != nil {
		_ = eng.Close()
		if errors.Is(err, meta.ErrNotFormatted) {
			return nil, meta.Format{}, fmt.Errorf("no volume at %s: %w (create one with 'shoal format %s')", secret.Mask(metaURL), meta.ErrNotFormatted, secret.Mask(metaURL))
		}
		return nil, meta.Format{}, fmt.Errorf("loading volume at %s: %w", secret.Mask(metaURL), err)
	}
	return eng, withoutCredentials(f), nil
}

// warnCredentials makes withoutCredentials warn once per process.
var warnCredentials sync.Once

// withoutCredentials takes credentials out of the bucket URL of settings
// written by old versions, saying so once in the log (without them): the
// object store's credentials come from the environment, a credentials
// file or an instance profile, never from stored settings.
func withoutCredentials(f meta.Format) meta.Format {
	bucket, had := secret.StripUserinfo(f.Bucket)
	if !had {
		return f
	}
	f.Bucket = bucket
	warnCredentials.Do(func() {
		slog.Warn("the volume's settings hold credentials in the bucket URL; they are ignored (and left out of dumps): "+
			"set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or a credentials file for every client, and rewrite the settings with 'shoal format --force'",
			"bucket", bucket)
	})
	return f
}

// Open opens the volume at metaURL with all its layers.
func Open(ctx context.Context, metaURL string, opts Options) (*Volume, error) {
	eng, f, err := Load(ctx, metaURL)
	if err != nil {
		return nil, err
	}
	// Retries sit under the checksums (or the seals of an encrypted
	// volume): a block is verified as it arrives from whichever attempt
	// delivered it. Every plain volume checksums its blocks
	// (docs/format.md); BlockStore adds compression and encryption.
	plain, err := OpenObjects(ctx, f, opts.StoreHook)
	if err != nil {
		_ = eng.Close()
		return nil, fmt.Errorf("volume %q: %w", f.Name, err)
	}
	claims, err := identity.Check(ctx, plain, f)
	if err != nil {
		_ = eng.Close()
		return nil, fmt.Errorf("opening volume %q: %w", f.Name, err)
	}
	if len(claims) > 1 && opts.Logger != nil {
		opts.Logger.Warn("the bucket is shared with another volume: this mount deletes no objects while it is", "claims", len(claims))
	}
	dataKey, err := DataKey(f, opts.Secret)
	if err != nil {
		_ = eng.Close()
		return nil, err
	}
	objects, err := BlockStore(plain, f, dataKey)
	if err != nil {
		_ = eng.Close()
		return nil, err
	}
	sealed, err := SealedStore(identity.Guard(plain, f), dataKey)
	if err != nil {
		_ = eng.Close()
		return nil, err
	}
	dc := opts.Data
	dc.BlockSize = f.BlockSize
	dc.NewID = eng.NewSliceID
	if g, ok := eng.(meta.CommitGater); ok {
		dc.GatedCommit = g.AwaitsCommitGate()
	}
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
	return &Volume{Format: f, Engine: eng, Objects: objects, Plain: plain, Sealed: sealed, Data: store, FS: vfs.New(eng, store, opts.VFS)}, nil
}

// Close flushes and closes every layer.
func (v *Volume) Close(ctx context.Context) error {
	return errors.Join(v.FS.Close(ctx), v.Data.Close(), v.Engine.Close())
}
