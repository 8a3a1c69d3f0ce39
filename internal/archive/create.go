package archive

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

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
	// Engine has meta.Snapshots and meta.TreeDumper, and best also
	// meta.LiveTreeDumper (backups without a snapshot).
	Engine meta.Engine
	Format meta.Format
	Store  object.Store  // the volume's object store, raw (volume.OpenObjects)
	Secret volume.Secret // an encrypted volume's secret: its dump is sealed
}

// Options tune Create.
type Options struct {
	Name string // default "backup-<UTC time>"
	Path string // the tree to back up; "" or "/" for the volume
	// KeepSnapshot takes the backup from a snapshot, kept under
	// /.snapshots/NAME.
	KeepSnapshot bool
	Jobs         int // blocks copied at a time (DefaultJobs)
	Progress     *progress.Progress
}

// CheckName refuses a name a backup cannot have.
func CheckName(name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("backup name %q: %w", name, errBadName)
	}
	return nil
}

// creation is one Create.
type creation struct {
	src   Source
	dest  object.Store
	o     Options
	p     *progress.Progress
	m     Manifest
	dump  *tempDump
	index []indexEntry // this backup's blocks, for its index
	// batch makes the blocks copied durable together, before the index.
	batch object.SyncBatch
	// present is what dest holds, learned once (prepareOnce).
	present    *present
	prepared   sync.Once
	prepareErr error
}

// Create writes a backup of the source's tree to dest: its tree dump,
// every block the dump references that dest lacks, the block index, then
// the manifest. It reads the live tree in one consistent read where the
// engine can (meta.LiveTreeDumper), and falls back to a snapshot when a
// block it must copy was deleted meanwhile or when asked to keep one.
func Create(ctx context.Context, src Source, dest object.Store, o Options) (Manifest, error) {
	c := &creation{src: src, dest: dest, o: o, p: o.Progress}
	if c.p == nil {
		c.p = &progress.Progress{}
	}
	if c.o.Name == "" {
		c.o.Name = "backup-" + time.Now().UTC().Format(defaultNameTime)
	}
	if err := CheckName(c.o.Name); err != nil {
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
	base, err := checkDest(ctx, dest, src.Format, c.o.Name)
	if err != nil {
		return Manifest{}, err
	}
	c.present = newPresent(dest, src.Format, base)
	if c.dump, err = newTempDump(); err != nil {
		return Manifest{}, err
	}
	defer c.dump.remove()
	c.m = Manifest{Name: c.o.Name, Volume: src.Format.Name, UUID: src.Format.UUID, Path: cleanPath(c.o.Path),
		Dump: dumpKey(c.o.Name), Format: src.Format}
	done := false
	if ld, ok := src.Engine.(meta.LiveTreeDumper); ok && !c.o.KeepSnapshot {
		if done, err = c.live(ctx, ld); err != nil {
			return c.m, err
		}
	}
	if !done {
		if err := c.fromSnapshot(ctx, sn, td); err != nil {
			return c.m, err
		}
	}
	if c.m.Quotas, err = treeQuotas(ctx, src.Engine, c.m.Path); err != nil {
		return c.m, err
	}
	return c.m, c.finish(ctx, dumps)
}

// treeQuotas lists the directory quotas of the tree at top, with paths
// from top. They are read after the tree, outside its consistent read: a
// quota set or removed during the backup may be missed or kept, and one
// whose directory was moved or deleted meanwhile is left out.
func treeQuotas(ctx context.Context, eng meta.Engine, top string) ([]QuotaLimit, error) {
	q, ok := eng.(meta.Quotas)
	if !ok {
		return nil, nil
	}
	all, err := q.ListQuotas(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the directory quotas: %w", err)
	}
	var out []QuotaLimit
	for _, x := range all {
		p, ok := meta.PathOf(ctx, eng, x.Ino)
		if !ok {
			continue
		}
		rel, ok := under(p, top)
		if ok {
			out = append(out, QuotaLimit{Path: rel, MaxSpace: x.MaxSpace, MaxInodes: x.MaxInodes})
		}
	}
	return out, nil
}

// under returns p as a path from top, if p is top or below it.
func under(p, top string) (string, bool) {
	if top == "/" {
		return p, true
	}
	if p == top {
		return "/", true
	}
	if strings.HasPrefix(p, top+"/") {
		return p[len(top):], true
	}
	return "", false
}

// live backs up the live tree (meta.LiveTreeDumper), copying blocks
// while the tree is read. It reports false, with no error, when a block
// the dump references was gone from the volume before it was copied:
// freed and deleted after the read, so the backup must be taken from a
// snapshot instead.
func (c *creation) live(ctx context.Context, ld meta.LiveTreeDumper) (bool, error) {
	c.p.Set("reading the tree, copying blocks", 0, 0)
	at := time.Now()
	j := c.startCopy(ctx)
	out, err := ld.DumpLive(j.ctx, meta.LiveDump{Path: c.o.Path, Begin: c.dump.begin, Slice: j.slice})
	if err == nil {
		err = c.dump.finish(&c.m, out)
	}
	if err != nil {
		j.cancel(err)
		// The dump's error, or the copy's that stopped the dump.
		if err = j.wait(); errors.Is(err, errSrcMissing) {
			return false, nil
		}
		return false, err
	}
	c.m.Created = at.UTC()
	err = c.finishBlocks(ctx, j, out.Slices)
	if errors.Is(err, errSrcMissing) {
		return false, nil
	}
	return err == nil, err
}

// fromSnapshot backs up a snapshot of the tree, deleted afterwards
// unless kept: its references hold every block it names.
func (c *creation) fromSnapshot(ctx context.Context, sn meta.Snapshots, td meta.TreeDumper) error {
	c.p.Set("taking a snapshot", 0, 0)
	snap, err := sn.CreateSnapshot(ctx, c.o.Name, c.o.Path)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if !c.o.KeepSnapshot {
		defer func() {
			c.p.Set("deleting the snapshot", 0, 0)
			_ = sn.DeleteSnapshot(context.WithoutCancel(ctx), c.o.Name)
		}()
	}
	c.m.Created, c.m.Path = time.Unix(0, snap.Created).UTC(), snap.Path
	c.p.Set("dumping the snapshot", 0, 0)
	w, err := c.dump.begin()
	if err != nil {
		return err
	}
	out, err := td.DumpTree(ctx, snap.Ino, w)
	if err != nil {
		return err
	}
	if err := c.dump.finish(&c.m, out); err != nil {
		return err
	}
	c.p.Set("copying blocks", 0, 0)
	j := c.startCopy(ctx)
	for id, size := range out.Slices {
		j.slice(id, size)
	}
	return c.finishBlocks(ctx, j, out.Slices)
}

// finish writes the block index, the dump and, last, the manifest.
func (c *creation) finish(ctx context.Context, dumps object.Store) error {
	c.p.Set("writing the dump", 0, 0)
	// The blocks' sync, the index and the dump in parallel; the
	// manifest once all three are durable.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, fn := range []func() error{
		func() error {
			if err := c.batch.Sync(); err != nil {
				return fmt.Errorf("syncing the blocks copied to %s: %w", c.dest, err)
			}
			return nil
		},
		func() error {
			if err := writeIndex(ctx, c.dest, c.m.Name, c.src.Format.BlockSize, c.index); err != nil {
				return fmt.Errorf("writing the block index to %s: %w", c.dest, err)
			}
			return nil
		},
		func() error {
			r, err := c.dump.reader()
			if err == nil {
				err = dumps.Put(ctx, c.m.Dump, r, c.m.DumpSize)
			}
			if err != nil {
				return fmt.Errorf("writing the dump to %s: %w", c.dest, err)
			}
			return nil
		},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := writeManifest(ctx, c.dest, c.m); err != nil {
		return fmt.Errorf("writing the manifest to %s: %w", c.dest, err)
	}
	return nil
}

// checkDest refuses a destination holding another volume's backups or a
// backup named name. It returns the newest backup there (by its
// manifest's write time), nil if none: the only manifest it reads, as
// every backup Create wrote to dest is of the volume it found there.
func checkDest(ctx context.Context, dest object.Store, f meta.Format, name string) (*Manifest, error) {
	var newest object.Info
	exists := false
	err := object.Walk(ctx, dest, Prefix, func(page []object.Info) {
		for _, info := range page {
			if !strings.HasSuffix(info.Key, "/"+manifestFile) {
				continue
			}
			exists = exists || info.Key == manifestKey(name)
			if c := info.ModTime.Compare(newest.ModTime); newest.Key == "" || c > 0 || c == 0 && info.Key > newest.Key {
				newest = info
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("listing backups in %s: %w", dest, err)
	}
	if newest.Key == "" {
		return nil, nil
	}
	m, err := readManifest(ctx, dest, newest.Key)
	if err != nil {
		return nil, err
	}
	if m.UUID != f.UUID {
		return nil, fmt.Errorf("%w (%q, uuid %s, backup %s): block keys are unique only within a volume, so give each volume a destination of its own",
			ErrOtherVolume, m.Volume, m.UUID, m.Name)
	}
	if exists {
		return nil, fmt.Errorf("%w in %s: %s", ErrExists, dest, name)
	}
	return &m, nil
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

// cleanPath is path as snapshots record it: "/" and the names, without
// empty ones and ".".
func cleanPath(path string) string {
	var names []string
	for _, n := range strings.Split(path, "/") {
		if n != "" && n != "." {
			names = append(names, n)
		}
	}
	return "/" + strings.Join(names, "/")
}
