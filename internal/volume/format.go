package volume

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"shoal/internal/identity"
	"shoal/internal/meta"
	"shoal/internal/object"
	"shoal/internal/object/objopen"
	"shoal/internal/secret"
)

// FormatOptions are the settings of a new volume.
type FormatOptions struct {
	Name      string
	Storage   string // "file" (default) or "s3"
	Bucket    string // directory or URL; for file storage with SQLite, defaults beside the database
	BlockSize int    // default 4 MiB
	Capacity  uint64
	Inodes    uint64
	Force     bool // replace the settings of an existing volume
	// Secret, when set, makes an encrypted volume whose data key is
	// wrapped under it (a passphrase or key-file bytes).
	Secret []byte
	// Compression of the volume's blocks: "none" (or ""), "zstd", "lz4".
	Compression string
	// TrashDays keeps deleted files this many days (meta.Format.TrashDays;
	// 0: off). Negative keeps an existing volume's setting (0 for a new one).
	TrashDays int
}

// Format creates a volume at metaURL. It connects to the engine, refuses an
// existing volume unless o.Force, and checks that the object store is
// reachable and writable before it writes the volume's settings.
func Format(ctx context.Context, metaURL string, o FormatOptions) (meta.Format, error) {
	eng, err := OpenEngine(ctx, metaURL)
	if err != nil {
		return meta.Format{}, err
	}
	defer eng.Close()
	old, err := eng.Load(ctx)
	existing := err == nil
	if existing && !o.Force {
		return meta.Format{}, fmt.Errorf("formatting %s: %w%s", secret.Mask(metaURL), meta.ErrFormatted, formatHint(meta.ErrFormatted, metaURL))
	}
	f, err := newFormat(metaURL, o)
	if err != nil {
		return meta.Format{}, err
	}
	var prev *meta.Format
	if existing {
		prev = &old
	}
	if err := setCompression(&f, o.Compression, prev); err != nil {
		return meta.Format{}, fmt.Errorf("formatting %s: %w", secret.Mask(metaURL), err)
	}
	if existing {
		// New settings for the same volume: its files, and so its
		// identity in the bucket, are kept.
		f.UUID, f.Created = old.UUID, old.Created
		if o.TrashDays < 0 {
			f.TrashDays = old.TrashDays
		}
	}
	if f.Encryption, err = encryptionFor(old, existing, o.Secret); err != nil {
		return meta.Format{}, err
	}
	if f.Encryption != nil {
		// Older binaries would read sealed objects as data and write
		// plain ones: version 3 makes them refuse the volume.
		f.Version = meta.CurrentFormatVersion
	}
	store, err := checkStore(ctx, f)
	if err != nil {
		return meta.Format{}, err
	}
	if err := checkUnclaimed(ctx, store, f, existing); err != nil {
		return meta.Format{}, err
	}
	if err := eng.Format(ctx, f, o.Force); err != nil {
		return meta.Format{}, fmt.Errorf("formatting %s: %w%s", secret.Mask(metaURL), err, formatHint(err, metaURL))
	}
	return f, claimFormatted(ctx, store, f)
}

// checkUnclaimed refuses a bucket that holds another volume: one that
// claims it, or (before claims existed) block objects. A bucket f's
// volume claims already (new settings for a volume in place) is fine.
func checkUnclaimed(ctx context.Context, store object.Store, f meta.Format, existing bool) error {
	claims, err := identity.List(ctx, store)
	if err != nil {
		return err
	}
	var others []string
	for _, c := range claims {
		if c.UUID == f.UUID {
			return nil
		}
		others = append(others, c.String())
	}
	if len(others) > 0 {
		return fmt.Errorf("object store %s is claimed by another volume already (%s): give each volume a bucket (or directory) of its own",
			store, strings.Join(others, "; "))
	}
	if existing {
		return nil
	}
	blocks, err := store.List(ctx, "chunks/", "", 1)
	if err != nil {
		return fmt.Errorf("object store %s: %w", store, err)
	}
	if len(blocks) > 0 {
		return fmt.Errorf("object store %s holds the blocks of another volume already (e.g. %s): give each volume a bucket (or directory) of its own",
			store, blocks[0].Key)
	}
	return nil
}

// claimFormatted records the new volume in its bucket.
func claimFormatted(ctx context.Context, store object.Store, f meta.Format) error {
	claims, err := identity.List(ctx, store)
	if err == nil {
		for _, c := range claims {
			if c.UUID == f.UUID {
				return nil
			}
		}
	}
	if err := identity.Put(ctx, store, identity.For(f, identity.HowFormat)); err != nil {
		return fmt.Errorf("formatted, but %w (the first mount claims the bucket)", err)
	}
	return nil
}

func formatHint(err error, metaURL string) string {
	if strings.Contains(err.Error(), meta.ErrFormatted.Error()) {
		return " (it holds a volume already; mount it with 'shoal mount " + secret.Mask(metaURL) + " MOUNTPOINT', or re-run with --force to replace its settings)"
	}
	return ""
}

func newFormat(metaURL string, o FormatOptions) (meta.Format, error) {
	f := meta.Format{
		Name: o.Name, UUID: newUUID(), Version: meta.CurrentFormatVersion,
		Storage: o.Storage, Bucket: o.Bucket, BlockSize: o.BlockSize,
		Capacity: o.Capacity, Inodes: o.Inodes, Created: time.Now().UTC(),
		TrashDays: max(o.TrashDays, 0),
	}
	if f.Storage == "" {
		f.Storage = "file"
	}
	if f.BlockSize == 0 {
		f.BlockSize = meta.MaxBlockSize
	}
	if f.BlockSize < 4096 || f.BlockSize > meta.MaxBlockSize {
		return f, fmt.Errorf("block size %d out of range: use 4 KiB to 4 MiB", f.BlockSize)
	}
	if _, had := secret.StripUserinfo(f.Bucket); had {
		return f, errBucketCredentials
	}
	if f.Bucket == "" {
		dir, ok := sqliteDir(metaURL)
		if f.Storage != "file" || !ok {
			return f, fmt.Errorf("--bucket is required for %s storage with this META-URL", f.Storage)
		}
		f.Bucket = filepath.Join(dir, "objects")
	}
	if f.Storage == "file" {
		abs, err := filepath.Abs(f.Bucket)
		if err != nil {
			return f, err
		}
		f.Bucket = abs
	}
	if f.Name == "" {
		f.Name = "shoal"
	}
	return f, nil
}

// errBucketCredentials refuses credentials in a bucket URL: they would be
// stored in the volume's settings, which every client and dump can read.
var errBucketCredentials = errors.New("the bucket URL carries credentials (KEY:SECRET@), which would be stored in the volume's settings: " +
	"give the URL without them and set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or SHOAL_S3_ACCESS_KEY and SHOAL_S3_SECRET_KEY) " +
	"in the environment of format and of every mount, or use ~/.aws/credentials (AWS_SHARED_CREDENTIALS_FILE, AWS_PROFILE) or an instance profile")

// checkStore writes, reads back and deletes a probe object, and returns
// the store.
func checkStore(ctx context.Context, f meta.Format) (object.Store, error) {
	s, err := objopen.Open(ctx, f.Storage, f.Bucket)
	if err != nil {
		return nil, fmt.Errorf("object store %s %s: %w", f.Storage, f.Bucket, err)
	}
	if c, ok := s.(objopen.Checker); ok {
		if err := c.Check(ctx); err != nil {
			return nil, err
		}
	}
	s = retrying(s, nil)
	key := "probe/format-" + f.UUID
	payload := []byte("shoal format probe")
	if err := s.Put(ctx, key, bytes.NewReader(payload), int64(len(payload))); err != nil {
		return nil, fmt.Errorf("object store %s is not writable: %w", s, err)
	}
	if _, err := s.Head(ctx, key); err != nil {
		return nil, fmt.Errorf("object store %s lost a probe object it just stored: %w", s, err)
	}
	return s, s.Delete(ctx, key)
}

// sqliteDir returns the directory of a sqlite:// database.
func sqliteDir(metaURL string) (string, bool) {
	rest, ok := strings.CutPrefix(metaURL, "sqlite://")
	if !ok || rest == "" {
		return "", false
	}
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		rest = rest[:i]
	}
	abs, err := filepath.Abs(rest)
	if err != nil {
		return "", false
	}
	return filepath.Dir(abs), true
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// NewUUID returns a random (version 4) uuid for a new volume.
func NewUUID() string { return newUUID() }
