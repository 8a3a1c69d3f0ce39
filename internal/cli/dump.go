package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"shoal/internal/backup"
	"shoal/internal/bench/progress"
	"shoal/internal/meta"
	"shoal/internal/volume"
)

// dumpFlags are the flags of shoal dump.
type dumpFlags struct {
	progress string
}

// newDumpCmd is `shoal dump`.
func newDumpCmd() *cobra.Command {
	f := &dumpFlags{}
	cmd := &cobra.Command{
		Use:   "dump META-URL FILE",
		Short: "Write a volume's whole metadata to a file (a portable backup)",
		Long: `Write the whole metadata of a volume (inodes, entries, symlinks, xattrs,
slice lists, reference counts, settings) to FILE as the portable dump stream
of docs/format.md: JSON lines, one per key. 'shoal load' reads it back into
an empty engine of any kind. File data stays in the object store; a dump
and the store together are the volume.

FILE '-' is stdout. A name ending in .gz or .zst is compressed (gzip or
zstd). The dump is streamed; a file is written under a temporary name and
renamed when complete. For a consistent dump, dump a volume that no client
is writing to (each key kind is read in one snapshot).`,
		Example: `  shoal dump sqlite:///var/lib/shoal/meta.db /backup/shoal.dump.zst
  shoal dump postgres://shoal@db/shoal - | gzip > shoal.dump.gz`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return runDump(cmd, args[0], args[1], f) },
	}
	cmd.Flags().StringVar(&f.progress, "progress", "auto", "progress on stderr: auto (live on a terminal; elsewhere a line for each phase that took over 1s), always, never")
	cmd.Flags().Lookup("progress").NoOptDefVal = "always"
	return cmd
}

// runDump dumps the engine's metadata to file.
func runDump(cmd *cobra.Command, metaURL, file string, f *dumpFlags) error {
	disp, err := gcDisplay(cmd.ErrOrStderr(), f.progress)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	ctx := cmd.Context()
	eng, _, err := volume.Load(ctx, metaURL)
	if err != nil {
		return loadError(err, metaURL)
	}
	defer eng.Close()
	d, ok := eng.(meta.Dumper)
	if !ok {
		return errors.New("dump: this metadata engine cannot dump")
	}
	out, commit, err := dumpTarget(cmd, file)
	if err != nil {
		return err
	}
	defer commit(false)
	var n backup.Counter
	stop := trackBytes(disp, "dump", "dumping", n.Count, 0)
	err = writeDump(ctx, d, n.Writer(out), file)
	stop()
	if err != nil {
		return DatabaseHint(err, metaURL)
	}
	if err := commit(true); err != nil {
		return err
	}
	if file != "-" {
		fmt.Fprintf(cmd.ErrOrStderr(), "dumped %s of metadata to %s\n", humanBytes(n.Count()), file)
	}
	return nil
}

// writeDump streams the dump through the compression file's name asks for.
func writeDump(ctx context.Context, d meta.Dumper, w io.Writer, file string) error {
	zw, err := backup.Compress(w, file)
	if err != nil {
		return err
	}
	if err := d.Dump(ctx, zw); err != nil {
		zw.Close()
		return fmt.Errorf("dump: %w", err)
	}
	return zw.Close()
}

// dumpTarget opens where the dump goes: stdout, or a temporary file beside
// file that commit(true) syncs and renames into place (commit(false)
// removes it, and is a no-op after a successful commit).
func dumpTarget(cmd *cobra.Command, file string) (io.Writer, func(ok bool) error, error) {
	if file == "-" {
		return cmd.OutOrStdout(), func(bool) error { return nil }, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".tmp-*")
	if err != nil {
		return nil, nil, fmt.Errorf("dump: %w", err)
	}
	done := false
	commit := func(ok bool) error {
		if done {
			return nil
		}
		done = true
		if !ok {
			tmp.Close()
			return os.Remove(tmp.Name())
		}
		err := errors.Join(tmp.Sync(), tmp.Close())
		if err == nil {
			err = os.Rename(tmp.Name(), file)
		}
		if err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("dump: writing %s: %w", file, err)
		}
		return nil
	}
	return tmp, commit, nil
}

// trackBytes shows a byte count (of total, 0 if unknown) on d until stop.
func trackBytes(d *progress.Display, label, phase string, count func() int64, total int64) (stop func()) {
	if d == nil {
		return func() {}
	}
	start := time.Now()
	state := func() progress.State {
		return progress.State{Phase: phase, Unit: "MiB/s", Done: count(), Total: total, Start: start}
	}
	d.Track(label, func() (progress.State, bool) { return state(), true })
	return func() {
		d.Stop()
		s := state()
		s.End = time.Now()
		d.PhaseDone(s)
	}
}
