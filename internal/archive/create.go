package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"time"

	"shoal/internal/backup"
	"shoal/internal/meta"
	"shoal/internal/object"
	"shoal/internal/progress"
	"shoal/internal/volume"
)

// Errors Create returns for a destination it will not write to.
var (
	ErrExists       = errors.New("a backup of that name exists")
	ErrOtherVolume  = errors.New("the destination holds backups of another volume")
	ErrNoSnapshots  = errors.New("this metadata engine has no snapshots or tree dumps")
	errBadName      = errors.New("a backup name is 1 to 200 letters, digits, '.', '_' or '-', not starting with '.'")
	validName       = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$`)
	defaultNameTime = "20060102T150405Z"
)

// Source is the volume a backup is taken of.
type Source struct {
	Engine meta.Engine // with meta.Snapshots and meta.TreeDumper
	Format meta.Format
	Store  object.Store  // the volume's object store, raw (volume.OpenObjects)
	Secret volume.Secret // an encrypted volume's secret: its dump is sealed
}

// Options tune Create.
type Options struct {
	Name         string // default "backup-<UTC time>"
	Path         string // the tree to back up; "" or "/" for the volume
	KeepSnapshot bool   // keep the snapshot taken (under /.snapshots/NAME)
	Jobs         int    // blocks copied at a time (DefaultJobs)
	Progress     *progress.Progress
}

// CheckName refuses a name a backup cannot have.
func CheckName(name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("backup name %q: %w", name, errBadName)
	}
	return nil
}

// Create takes a snapshot of the source, writes its tree dump and every
// block it references that dest lacks, then the manifest.
func Create(ctx context.Context, src Source, dest object.Store, o Options) (Manifest, error) {
	p := o.Progress
	if p == nil {
		p = &progress.Progress{}
	}
	now := time.Now().UTC()
	if o.Name == "" {
		o.Name = "backup-" + now.Format(defaultNameTime)
	}
	if err := CheckName(o.Name); err != nil {
		return Manifest{}, err
	}
	sn, ok1 := src.Engine.(meta.Snapshots)
	td, ok2 := src.Engine.(meta.TreeDumper)
	if !ok1 || !ok2 {
		return Manifest{}, ErrNoSnapshots
	}
	dumps, err := dumpStore(dest, src.Format, src.Secret)
	if err != nil {
		return Manifest{}, err
	}
	if err := checkDest(ctx, dest, src.Format, o.Name); err != nil {
		return Manifest{}, err
	}
	p.Set("taking a snapshot", 0, 0)
	snap, err := sn.CreateSnapshot(ctx, o.Name, o.Path)
	if err != nil {
		return Manifest{}, fmt.Errorf("snapshot: %w", err)
	}
	if !o.KeepSnapshot {
		defer func() { _ = sn.DeleteSnapshot(context.WithoutCancel(ctx), o.Name) }()
	}
	m := Manifest{Name: o.Name, Created: time.Unix(0, snap.Created).UTC(), Volume: src.Format.Name,
		UUID: src.Format.UUID, Path: snap.Path, Dump: dumpKey(o.Name), Format: src.Format}
	tmp, slices, err := dumpToTemp(ctx, td, snap.Ino, &m, p)
	if err != nil {
		return m, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if err := backupBlocks(ctx, src, dest, slices, &m, o.Jobs, p); err != nil {
		return m, err
	}
	p.Set("writing the dump", 0, 0)
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return m, err
	}
	if err := dumps.Put(ctx, m.Dump, tmp, m.DumpSize); err != nil {
		return m, fmt.Errorf("writing the dump to %s: %w", dest, err)
	}
	if err := writeManifest(ctx, dest, m); err != nil {
		return m, fmt.Errorf("writing the manifest to %s: %w", dest, err)
	}
	return m, nil
}

// checkDest refuses a destination holding another volume's backups or a
// backup named name.
func checkDest(ctx context.Context, dest object.Store, f meta.Format, name string) error {
	all, err := List(ctx, dest)
	if err != nil {
		return err
	}
	for _, m := range all {
		if m.UUID != f.UUID {
			return fmt.Errorf("%w (%q, uuid %s, backup %s): block keys are unique only within a volume, so give each volume a destination of its own",
				ErrOtherVolume, m.Volume, m.UUID, m.Name)
		}
		if m.Name == name {
			return fmt.Errorf("%w in %s: %s", ErrExists, dest, name)
		}
	}
	return nil
}

// dumpStore returns the store dumps go through: dest itself, or dest
// sealed with an encrypted volume's data key.
func dumpStore(dest object.Store, f meta.Format, secret volume.Secret) (object.Store, error) {
	key, err := volume.DataKey(f, secret)
	if err != nil {
		return nil, err
	}
	return volume.SealedStore(dest, key)
}

// dumpToTemp writes the tree dump, zstd-compressed, to a temporary file,
// recording its size and checksum in m.
func dumpToTemp(ctx context.Context, td meta.TreeDumper, top meta.Ino, m *Manifest, p *progress.Progress) (*os.File, map[meta.SliceID]uint32, error) {
	p.Set("dumping the snapshot", 0, 0)
	tmp, err := os.CreateTemp("", "shoal-backup-*.dump.zst")
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*os.File, map[meta.SliceID]uint32, error) {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, nil, err
	}
	h := sha256.New()
	var n backup.Counter
	zw, err := backup.Compress(n.Writer(io.MultiWriter(tmp, h)), dumpFile)
	if err != nil {
		return fail(err)
	}
	out, err := td.DumpTree(ctx, top, zw)
	if err != nil {
		zw.Close()
		return fail(err)
	}
	if err := zw.Close(); err != nil {
		return fail(err)
	}
	m.Inodes, m.Bytes = out.Inodes, out.Bytes
	m.DumpSize, m.DumpSHA256 = n.Count(), hex.EncodeToString(h.Sum(nil))
	return tmp, out.Slices, nil
}

// backupBlocks copies the blocks dest lacks, recording counts in m.
func backupBlocks(ctx context.Context, src Source, dest object.Store, slices map[meta.SliceID]uint32, m *Manifest, jobs int, p *progress.Progress) error {
	p.Set("listing the destination", 0, 0)
	blocks := blocksOf(slices, src.Format.BlockSize)
	present, err := listBlocks(ctx, dest)
	if err != nil {
		return err
	}
	todo := missing(blocks, present, src.Format)
	p.Set("copying blocks", 0, int64(len(todo)))
	copied, err := copyBlocks(ctx, src.Store, dest, todo, jobs, p)
	if err != nil {
		return err
	}
	m.Blocks, m.Copied, m.CopiedBytes = int64(len(blocks)), int64(len(todo)), copied
	m.Stored = copied
	copiedKeys := make(map[string]bool, len(todo))
	for _, b := range todo {
		copiedKeys[b.key] = true
	}
	for _, b := range blocks {
		if !copiedKeys[b.key] {
			m.Stored += present[b.key]
		}
	}
	return nil
}
