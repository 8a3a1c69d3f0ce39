package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Volume is a formatted Shoal volume owned by one test. Its files live in
// Dir, which is removed when the test ends (after its mounts are gone).
type Volume struct {
	Dir        string // holds the metadata database, bucket and mountpoint
	MetaURL    string // the META-URL given to format and mount
	Bucket     string // the file-store directory ("" for other stores)
	Mountpoint string // default mountpoint, created empty
}

// VolumeConfig selects a volume's engine and store for NewVolumeWith. A zero
// value is the embedded default: SQLite in Dir/meta.db, a file bucket in
// Dir/bucket.
type VolumeConfig struct {
	// MetaURL overrides the metadata engine; it may use "{dir}"
	// as a placeholder for the volume's directory.
	MetaURL string
	// FormatArgs replaces the storage flags given to `shoal format` when
	// set (e.g. --storage s3 --bucket URL); "{dir}" is substituted.
	FormatArgs []string
	// ExtraFormatArgs are appended to the format command (e.g. --block-size 1M).
	ExtraFormatArgs []string
}

// NewVolume formats a fresh embedded volume (SQLite + local bucket) with the
// real binary. It requires FUSE only when mounted.
func NewVolume(t testing.TB) *Volume {
	t.Helper()
	return NewVolumeWith(t, VolumeConfig{})
}

// NewVolumeWith formats a fresh volume as cfg says.
func NewVolumeWith(t testing.TB, cfg VolumeConfig) *Volume {
	t.Helper()
	v := NewUnformatted(t, cfg.MetaURL)
	args := []string{"format", v.MetaURL, "--name", "test"}
	if cfg.FormatArgs != nil {
		v.Bucket = ""
		args = append(args, substDir(cfg.FormatArgs, v.Dir)...)
	} else {
		args = append(args, "--storage", "file", "--bucket", v.Bucket)
	}
	args = append(args, substDir(cfg.ExtraFormatArgs, v.Dir)...)
	MustRun(t, args...)
	return v
}

// NewUnformatted returns a Volume whose directories exist but which has not
// been formatted; metaURL "" means SQLite in Dir/meta.db.
func NewUnformatted(t testing.TB, metaURL string) *Volume {
	t.Helper()
	base, err := ScratchDir()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(base, "vol-")
	if err != nil {
		t.Fatal(err)
	}
	// Searchable by all so that helpers running as another user reach the mountpoint.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeAll(t, dir) })
	v := &Volume{
		Dir:        dir,
		MetaURL:    "sqlite://" + filepath.Join(dir, "meta.db"),
		Bucket:     filepath.Join(dir, "bucket"),
		Mountpoint: filepath.Join(dir, "mnt"),
	}
	if metaURL != "" {
		v.MetaURL = substDir([]string{metaURL}, dir)[0]
	}
	if err := os.Mkdir(v.Mountpoint, 0o755); err != nil {
		t.Fatal(err)
	}
	return v
}

func substDir(args []string, dir string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, "{dir}", dir)
	}
	return out
}

// removeAll removes dir unless something is still mounted under it, in
// which case it reports that instead of descending into a live mount.
func removeAll(t testing.TB, dir string) {
	if under := mountsUnder(dir); len(under) > 0 {
		t.Errorf("not removing %s: still mounted: %v", dir, under)
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Logf("removing %s: %v", dir, err)
	}
}

// FileStoreTempPrefix starts the names of the file store's temporary
// files (the filestore package checks that it matches its own). They are
// not objects: a mount's spare files come and go while it runs.
const FileStoreTempPrefix = ".shoal-tmp-"

// ObjectFiles lists the objects in the volume's bucket directory: the
// regular files, relative to it (object keys for the file store), in walk
// order, leaving out the store's temporary files and the empty block
// objects a mount makes ahead of their Puts (docs/format.md: a block is
// never empty). Files that vanish during the walk are left out too.
func (v *Volume) ObjectFiles(t testing.TB) []string {
	t.Helper()
	var keys []string
	err := filepath.WalkDir(v.Bucket, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && p != v.Bucket {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), FileStoreTempPrefix) {
			rel, _ := filepath.Rel(v.Bucket, p)
			if strings.HasPrefix(filepath.ToSlash(rel), "chunks/") {
				if fi, err := d.Info(); err != nil || fi.Size() == 0 {
					return nil // a block name made ahead, or gone
				}
			}
			keys = append(keys, rel)
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatalf("listing bucket: %v", err)
	}
	return keys
}

// BlockObjects lists the data block objects in the volume's bucket
// directory (keys under chunks/, see docs/format.md), leaving out other
// objects such as metadata backups.
func (v *Volume) BlockObjects(t testing.TB) []string {
	t.Helper()
	var keys []string
	for _, k := range v.ObjectFiles(t) {
		if strings.HasPrefix(filepath.ToSlash(k), "chunks/") {
			keys = append(keys, k)
		}
	}
	return keys
}
