package archive

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"shoal/internal/object"
	"shoal/internal/volume"
)

// PruneGrace is how old an unreferenced block must be for Delete to prune
// it: a backup running at the same time may have copied it and not yet
// written its manifest.
const PruneGrace = time.Hour

// Pruned is what Delete pruned.
type Pruned struct {
	Objects int64
	Bytes   int64
	Young   int64 // unreferenced, within PruneGrace: kept
}

// Delete deletes backup name: its manifest first (from then on the backup
// is gone), then its dump and block index. With prune it also deletes the blocks no
// remaining backup references, reading their dumps (secret: for an
// encrypted volume's), except blocks younger than PruneGrace.
func Delete(ctx context.Context, dest object.Store, name string, prune bool, secret volume.Secret) (Pruned, error) {
	var pr Pruned
	m, err := Find(ctx, dest, name)
	if err != nil {
		return pr, err
	}
	if err := dest.Delete(ctx, manifestKey(m.Name)); err != nil {
		return pr, fmt.Errorf("deleting backup %s: %w", m.Name, err)
	}
	if err := dest.Delete(ctx, m.Dump); err != nil {
		return pr, fmt.Errorf("deleting the dump of backup %s: %w", m.Name, err)
	}
	if err := dest.Delete(ctx, indexKey(m.Name)); err != nil {
		return pr, fmt.Errorf("deleting the block index of backup %s: %w", m.Name, err)
	}
	if !prune {
		return pr, nil
	}
	return pruneBlocks(ctx, dest, secret)
}

// pruneBlocks deletes the blocks no backup's dump references.
func pruneBlocks(ctx context.Context, dest object.Store, secret volume.Secret) (Pruned, error) {
	var pr Pruned
	keep := map[string]bool{}
	all, err := List(ctx, dest)
	if err != nil {
		return pr, err
	}
	start := time.Now()
	for _, m := range all {
		f, err := fetchDump(ctx, dest, m, secret)
		if err != nil {
			return pr, fmt.Errorf("backup %s: %w: nothing pruned", m.Name, err)
		}
		_, slices, err := dumpSlices(f)
		f.Close()
		os.Remove(f.Name())
		if err != nil {
			return pr, fmt.Errorf("backup %s: %w: nothing pruned", m.Name, err)
		}
		for _, b := range blocksOf(slices, m.Format.BlockSize) {
			keep[b.key] = true
		}
	}
	var infos []object.Info
	err = object.Walk(ctx, dest, "chunks/", func(page []object.Info) { infos = append(infos, page...) })
	if err != nil {
		return pr, err
	}
	for _, info := range infos {
		switch {
		case keep[info.Key]:
		case start.Sub(info.ModTime) < PruneGrace:
			pr.Young++
		default:
			if err := dest.Delete(ctx, info.Key); err != nil && !errors.Is(err, object.ErrNotExist) {
				return pr, err
			}
			pr.Objects++
			pr.Bytes += info.Size
		}
	}
	return pr, nil
}
