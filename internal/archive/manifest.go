package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"shoal/internal/meta"
	"shoal/internal/object"
)

// Prefix is where backups' dumps and manifests live in a destination.
const Prefix = "backups/"

const (
	manifestFile = "manifest.json"
	dumpFile     = "dump.zst"
)

// ErrNotFound is returned for a backup name a destination does not hold.
var ErrNotFound = errors.New("no such backup")

// Manifest describes one backup; it is written last.
type Manifest struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"` // when the snapshot was taken
	Volume  string    `json:"volume"`  // the source volume's name
	UUID    string    `json:"uuid"`    // and uuid
	Path    string    `json:"path"`    // the tree backed up ("/" for all)
	Inodes  int64     `json:"inodes"`
	Bytes   int64     `json:"bytes"`  // the files' lengths
	Blocks  int64     `json:"blocks"` // block objects the dump references
	Stored  int64     `json:"stored_bytes"`
	// Copied and CopiedBytes are what this backup copied; the rest was
	// in the destination already.
	Copied      int64 `json:"copied_blocks"`
	CopiedBytes int64 `json:"copied_bytes"`
	// Dump is the key of the dump object; DumpSHA256 the SHA-256 of its
	// bytes as read through the dump store (zstd, before any seal).
	Dump       string `json:"dump"`
	DumpSize   int64  `json:"dump_size"`
	DumpSHA256 string `json:"dump_sha256"`
	// Format is the volume's settings at the backup, without
	// credentials: block size, compression and encryption (the wrapped
	// key), which reading the blocks and the dump needs.
	Format meta.Format `json:"format"`
	// Quotas are the directory quotas set in the tree at the backup,
	// which Restore sets again (their usage is recounted there).
	Quotas []QuotaLimit `json:"quotas,omitempty"`
}

// QuotaLimit is a directory quota as a backup keeps it: the directory's
// path from the top of the tree backed up ("/" is the top itself) and its
// limits (0 is no limit).
type QuotaLimit struct {
	Path      string `json:"path"`
	MaxSpace  uint64 `json:"max_space"`
	MaxInodes uint64 `json:"max_inodes"`
}

func manifestKey(name string) string { return Prefix + name + "/" + manifestFile }
func dumpKey(name string) string     { return Prefix + name + "/" + dumpFile }

// List returns the destination's backups, oldest first.
func List(ctx context.Context, dest object.Store) ([]Manifest, error) {
	var keys []string
	err := object.Walk(ctx, dest, Prefix, func(page []object.Info) {
		for _, info := range page {
			if strings.HasSuffix(info.Key, "/"+manifestFile) {
				keys = append(keys, info.Key)
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("listing backups in %s: %w", dest, err)
	}
	out := make([]Manifest, 0, len(keys))
	for _, k := range keys {
		m, err := readManifest(ctx, dest, k)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Manifest) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// Find returns the manifest of backup name, or of the newest backup when
// name is "" or "latest": ErrNotFound if there is none.
func Find(ctx context.Context, dest object.Store, name string) (Manifest, error) {
	if name != "" && name != "latest" {
		m, err := readManifest(ctx, dest, manifestKey(name))
		if errors.Is(err, object.ErrNotExist) {
			return m, fmt.Errorf("%w named %s in %s", ErrNotFound, name, dest)
		}
		return m, err
	}
	all, err := List(ctx, dest)
	if err != nil {
		return Manifest{}, err
	}
	if len(all) == 0 {
		return Manifest{}, fmt.Errorf("%w: %s holds no backups", ErrNotFound, dest)
	}
	return all[len(all)-1], nil
}

func readManifest(ctx context.Context, dest object.Store, key string) (Manifest, error) {
	var m Manifest
	rc, err := dest.Get(ctx, key, 0, -1)
	if err != nil {
		return m, fmt.Errorf("reading %s: %w", key, err)
	}
	defer rc.Close()
	raw, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	if err != nil {
		return m, fmt.Errorf("reading %s: %w", key, err)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("%s is damaged: %w", key, err)
	}
	return m, nil
}

func writeManifest(ctx context.Context, dest object.Store, m Manifest) error {
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	raw = append(raw, '\n')
	return dest.Put(ctx, manifestKey(m.Name), bytes.NewReader(raw), int64(len(raw)))
}
