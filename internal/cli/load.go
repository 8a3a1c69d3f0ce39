package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mattn/go-sqlite3"
	"github.com/spf13/cobra"

	"shoal/internal/backup"
	"shoal/internal/meta"
	"shoal/internal/secret"
	"shoal/internal/volume"
)

// loadFlags are the flags of shoal load.
type loadFlags struct {
	storage  string
	bucket   string
	progress string
	replace  bool
}

// newLoadCmd is `shoal load`.
func newLoadCmd() *cobra.Command {
	f := &loadFlags{}
	cmd := &cobra.Command{
		Use:   "load META-URL FILE",
		Short: "Restore a volume's metadata from a dump or backup into an empty engine",
		Long: `Read a dump written by 'shoal dump' (or an automatic backup) into the empty
metadata engine META-URL: a new SQLite file, an empty PostgreSQL schema or
an unused Redis database. An engine that already holds a volume is refused.
The restored volume uses the object store its settings name; mount it as
usual. Gzip and zstd dumps are recognised by their content.

FILE '-' is stdin. With --bucket, FILE is instead the key of a backup object
in that store (as listed under meta-backup/), or 'latest' for the newest
one. For file storage a backup is also a plain file under the bucket
directory, which can be given as FILE directly.

The loaded volume is a volume of its own: it gets a new uuid, starts with
no mounts (the sessions and locks of the dump are dropped, and files that
were unlinked while open are purged), and allocates slice ids far from its
source's. Its data stays in the source's bucket, so the two share blocks:

  by default it is a COPY. It claims the bucket beside the volume the dump
  came from, and while both claim it, neither deletes objects there (gc
  refuses, mounts keep freed data): space is kept, never data. When one
  of them is gone for good, release its claim with 'shoal claims
  --release UUID META-URL'.

  with --replace it takes the source's place (a restore after losing the
  database, or a move to another engine): the source's claim is released,
  so the engine the dump came from can no longer mount the volume, and
  deletions go on as before. Use it only when that engine is gone or
  retired.

An interrupted load leaves the engine unformatted: empty it (delete the
SQLite file, drop the schema) and load again.`,
		Example: `  shoal load sqlite:///var/lib/shoal/new.db /backup/shoal.dump.zst
  shoal load sqlite:///var/lib/shoal/new.db /var/lib/shoal/objects/meta-backup/20261122T010000Z.dump.zst
  AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... SHOAL_META_PASSWORD=... \
    shoal load --storage s3 --bucket https://s3.example.com/shoal postgres://shoal@db/shoal latest`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return runLoad(cmd, args[0], args[1], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.storage, "storage", "file", "with --bucket: the object store kind")
	fl.StringVar(&f.bucket, "bucket", "", "read FILE as a backup object key (or 'latest') from this object store")
	fl.StringVar(&f.progress, "progress", "auto", "progress on stderr: auto (when a terminal), always, never")
	fl.Lookup("progress").NoOptDefVal = "always"
	fl.BoolVar(&f.replace, "replace", false, "the loaded volume replaces the one the dump came from, whose engine can no longer mount it (default: a copy that shares the bucket)")
	return cmd
}

// runLoad restores a dump into an empty engine.
func runLoad(cmd *cobra.Command, metaURL, file string, f *loadFlags) error {
	disp, err := gcDisplay(cmd.ErrOrStderr(), f.progress)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	ctx := cmd.Context()
	eng, err := volume.OpenEngine(ctx, metaURL)
	if err != nil {
		return DatabaseHint(err, metaURL)
	}
	defer eng.Close()
	d, ok := eng.(meta.Dumper)
	if !ok {
		return errors.New("load: this metadata engine cannot restore dumps")
	}
	if err := refuseFormatted(ctx, eng, metaURL); err != nil {
		return err
	}
	src, size, err := openDump(ctx, cmd, file, f)
	if err != nil {
		return err
	}
	defer src.Close()
	var n Counter
	stop := trackBytes(disp, "load", "loading", n.Count, size)
	err = restore(ctx, d, n.Reader(src))
	stop()
	if err != nil {
		return err
	}
	mode := volume.LoadCopy
	if f.replace {
		mode = volume.LoadReplace
	}
	a, err := volume.Adopt(ctx, eng, mode)
	if err != nil {
		return fmt.Errorf("load: the metadata is restored, but %w; empty the engine and load again", err)
	}
	printLoaded(cmd.ErrOrStderr(), a, humanBytes(n.Count()), f.replace)
	return nil
}

// printLoaded says what the load made and what the bucket looks like.
func printLoaded(w io.Writer, a volume.Adopted, size string, replace bool) {
	vf := a.Format
	fmt.Fprintf(w, "loaded volume %q (%s of dump) as uuid %s; its data is in %s %s\n", vf.Name, size, vf.UUID, vf.Storage, vf.Bucket)
	if a.Purged > 0 {
		fmt.Fprintf(w, "purged %d files that were unlinked but still open when the dump was taken\n", a.Purged)
	}
	if replace {
		fmt.Fprintf(w, "it replaces volume %s, whose claim on the bucket is released: that volume's engine can no longer mount it\n", a.Source)
	}
	if len(a.Claims) > 1 {
		fmt.Fprintf(w, "the bucket is shared by %d volumes; none deletes objects there until only one claims it:\n", len(a.Claims))
		for _, c := range a.Claims {
			fmt.Fprintf(w, "  %s\n", c)
		}
		fmt.Fprintf(w, "when one of them is gone for good: shoal claims --release UUID META-URL\n")
	}
}

// Counter is backup.Counter, named here for the commands that count bytes.
type Counter = backup.Counter

// refuseFormatted fails unless eng holds no volume.
func refuseFormatted(ctx context.Context, eng meta.Engine, metaURL string) error {
	vf, err := eng.Load(ctx)
	switch {
	case err == nil:
		return fmt.Errorf("load: %s already holds volume %q (uuid %s): load only into an empty engine (a new SQLite file, an empty PostgreSQL schema, an unused Redis database)", secret.Mask(metaURL), vf.Name, vf.UUID)
	case errors.Is(err, meta.ErrNotFormatted):
		return nil
	}
	return DatabaseHint(fmt.Errorf("load: %w", err), metaURL)
}

// restore decompresses r as needed and restores it.
func restore(ctx context.Context, d meta.Dumper, r io.Reader) error {
	plain, err := backup.Decompress(r)
	if err != nil {
		return err
	}
	defer plain.Close()
	if err := d.Restore(ctx, plain); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	return nil
}

// openDump opens the dump: stdin, a file, or a backup object of a store.
// size is its length when known (0 otherwise).
func openDump(ctx context.Context, cmd *cobra.Command, file string, f *loadFlags) (io.ReadCloser, int64, error) {
	if f.bucket != "" {
		return openBackupObject(ctx, file, f)
	}
	if file == "-" {
		return io.NopCloser(cmd.InOrStdin()), 0, nil
	}
	fh, err := os.Open(file)
	if err != nil {
		return nil, 0, fmt.Errorf("load: %w", err)
	}
	var size int64
	if fi, err := fh.Stat(); err == nil {
		size = fi.Size()
	}
	return fh, size, nil
}

// openBackupObject opens a backup object (or the newest) of a store.
func openBackupObject(ctx context.Context, key string, f *loadFlags) (io.ReadCloser, int64, error) {
	store, err := volume.OpenStore(ctx, f.storage, f.bucket, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("load: %w", err)
	}
	if key == "latest" {
		list, err := backup.List(ctx, store)
		if err != nil {
			return nil, 0, err
		}
		if len(list) == 0 {
			return nil, 0, fmt.Errorf("load: no backups under %s in %s", backup.Prefix, store)
		}
		key = list[len(list)-1].Key
	}
	info, err := store.Head(ctx, key)
	if err != nil {
		return nil, 0, fmt.Errorf("load: backup %s in %s: %w", key, store, err)
	}
	rc, err := store.Get(ctx, key, 0, -1)
	if err != nil {
		return nil, 0, fmt.Errorf("load: backup %s in %s: %w", key, store, err)
	}
	return rc, info.Size, nil
}

// DatabaseHint adds what to do to an error that says a SQLite metadata
// database is corrupt (malformed, or not a database: e.g. truncated); other
// errors are returned as they are. The mount uses it too.
func DatabaseHint(err error, metaURL string) error {
	var se sqlite3.Error
	if err == nil || !errors.As(err, &se) || (se.Code != sqlite3.ErrCorrupt && se.Code != sqlite3.ErrNotADB) {
		return err
	}
	dir := "<the database's directory>/objects"
	if path, ok := strings.CutPrefix(metaURL, "sqlite://"); ok {
		dir = strings.TrimSuffix(path[:strings.LastIndexByte(path, '/')+1], "/") + "/objects"
	}
	return fmt.Errorf("%w\ndatabase is corrupt: restore from a backup with 'shoal load --replace sqlite:///NEW.db BACKUP' "+
		"(automatic backups are in the volume's bucket under %s, e.g. %s/%s; or a file from 'shoal dump'), "+
		"then move NEW.db into place and run 'shoal fsck'", err, backup.Prefix, dir, backup.Prefix)
}
