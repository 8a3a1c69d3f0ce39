package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"shoal/internal/bench/progress"
	"shoal/internal/gc"
	"shoal/internal/identity"
	"shoal/internal/meta"
	"shoal/internal/volume"
)

// gcFlags are the flags of shoal gc.
type gcFlags struct {
	dryRun      bool
	grace       time.Duration
	deleteFreed bool
	jsonOut     bool
	progress    string
}

func newGCCmd() *cobra.Command {
	f := &gcFlags{}
	cmd := &cobra.Command{
		Use:   "gc META-URL",
		Short: "Find and delete objects no file refers to; report missing ones",
		Long: `Collect garbage in a volume's object store: block objects that no slice
refers to (left by a client that crashed between uploading and committing),
and, with --delete-freed, the objects of slices no file refers to any more
(normally a mount deletes those itself).

gc is safe on a mounted volume: an unreferenced object younger than --grace
may belong to a write that is about to commit, so it is only reported. Ages
are measured on the object store's clock. Objects under chunks/ whose names
are not block names are reported and never deleted.

gc deletes only from a bucket the volume claims alone. A volume loaded
from a dump of another shares its bucket (see 'shoal load'); while a
bucket has more than one claimant, gc refuses to delete (exit status 1)
and names the claimants; --dry-run still reports.

gc also reports damage: files whose data objects are missing. It exits with
status 3 when it finds any, 1 when a delete failed.`,
		Example: `  shoal gc --dry-run sqlite:///var/lib/shoal/meta.db
  shoal gc --grace 24h --json sqlite:///var/lib/shoal/meta.db`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runGC(cmd, args[0], f) },
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.dryRun, "dry-run", false, "report only; delete nothing")
	fl.DurationVar(&f.grace, "grace", gc.DefaultGrace, "keep unreferenced objects younger than this (0: none; only on a volume no client writes to)")
	fl.BoolVar(&f.deleteFreed, "delete-freed", false, "also delete the objects of freed slices and drop them from the freed list")
	fl.BoolVar(&f.jsonOut, "json", false, "print the report as JSON on stdout")
	fl.StringVar(&f.progress, "progress", "auto", "progress on stderr: auto (live on a terminal; elsewhere a line for each phase that took over 1s), always, never")
	fl.Lookup("progress").NoOptDefVal = "always"
	return cmd
}

// runGC opens the volume's engine and store and runs the collection.
func runGC(cmd *cobra.Command, metaURL string, f *gcFlags) error {
	if f.grace < 0 {
		return withCode(ExitUsage, fmt.Errorf("gc: --grace %v is negative", f.grace))
	}
	disp, err := gcDisplay(cmd.ErrOrStderr(), f.progress)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	ctx := cmd.Context()
	eng, vf, err := volume.Load(ctx, metaURL)
	if err != nil {
		if errors.Is(err, meta.ErrNotFormatted) {
			return withCode(ExitNotFound, err)
		}
		return err
	}
	defer eng.Close()
	// Listing and deleting need no checksum wrapper; transient store
	// failures are retried as the mount retries them.
	store, err := volume.OpenObjects(ctx, vf, nil)
	if err != nil {
		return fmt.Errorf("gc: %w", err)
	}
	o := gc.Options{DryRun: f.dryRun, Grace: max(f.grace, time.Nanosecond),
		DeleteFreed: f.deleteFreed, BlockSize: vf.BlockSize, Progress: &gc.Progress{}}
	stop := trackGC(disp, o.Progress)
	started := time.Now()
	rep, err := gc.Run(ctx, eng, store, o)
	stop()
	recordGC(eng, started, rep, err)
	if errors.Is(err, identity.ErrShared) || errors.Is(err, identity.ErrNotClaimant) {
		return err // nothing was deleted; the error says why and what to do
	}
	if rep != nil {
		if perr := printGC(cmd.OutOrStdout(), rep, f.jsonOut); perr != nil && err == nil {
			err = perr
		}
	}
	if err != nil {
		return err
	}
	if rep.Damaged() {
		return withCode(ExitDamage, fmt.Errorf("gc: the volume is damaged: %d objects missing, %d other problems (run shoal fsck)", rep.MissingN, len(rep.Problems)))
	}
	return nil
}

// gcDisplay builds the display --progress asks for, or nil.
func gcDisplay(w io.Writer, mode string) (*progress.Display, error) {
	tty := false
	if file, ok := w.(*os.File); ok {
		tty = progress.IsTerminal(file)
	}
	switch mode {
	case "never":
		return nil, nil
	case "always":
		return progress.New(w, tty), nil
	case "auto":
		d := progress.New(w, tty)
		d.QuietUnder(time.Second) // off a terminal: only phases that took a while
		return d, nil
	}
	return nil, withCode(ExitUsage, fmt.Errorf("--progress %q: want auto, always or never", mode))
}

// trackGC shows p on d until the returned stop is called.
func trackGC(d *progress.Display, p *gc.Progress) (stop func()) {
	return trackPhases(d, "gc", p.Snapshot)
}

// printGC writes the report as text or JSON.
func printGC(w io.Writer, r *gc.Report, asJSON bool) error {
	if asJSON {
		return printJSON(w, r)
	}
	count := func(c gc.Count) string { return fmt.Sprintf("%d objects, %s", c.Objects, humanBytes(c.Bytes)) }
	mode := "deleting"
	if r.DryRun {
		mode = "dry run: nothing deleted"
	}
	fmt.Fprintf(w, "gc (%s), %s clock, objects older than %s are collectable\n", mode, r.Clock, r.Cutoff.Format(time.RFC3339))
	fmt.Fprintf(w, "Metadata    %d slices referenced (%d references), %d freed slices, %d orphan inodes\n", r.Slices, r.SliceRefs, r.Freed, r.Orphans)
	fmt.Fprintf(w, "Objects     %s\n", count(r.Objects))
	fmt.Fprintf(w, "  live      %s\n", count(r.Live))
	fmt.Fprintf(w, "  leaked    %s%s\n", count(r.Leaked), gcSample(r.LeakedKeys))
	fmt.Fprintf(w, "  young     %s (unreferenced, within grace: kept)%s\n", count(r.Young), gcSample(r.YoungKeys))
	fmt.Fprintf(w, "  freed     %s (of freed slices)\n", count(r.FreedObjs))
	fmt.Fprintf(w, "  foreign   %s (not block names: kept)%s\n", count(r.Foreign), gcSample(r.Foreigners))
	if r.TempRemoved > 0 {
		fmt.Fprintf(w, "  temporary %d files of interrupted writes removed\n", r.TempRemoved)
	}
	if r.Mismatched.Objects > 0 {
		fmt.Fprintf(w, "  odd       %s (blocks a live slice does not have: kept; wrong block size?)%s\n", count(r.Mismatched), gcSample(r.MismatchedKeys))
	}
	if r.Shared != "" {
		fmt.Fprintf(w, "SHARED      %s\n", r.Shared)
	}
	if r.Refused != "" {
		fmt.Fprintf(w, "REFUSED     to delete anything: %s\n", r.Refused)
	}
	if !r.DryRun && r.Refused == "" {
		fmt.Fprintf(w, "Deleted     %s leaked; %s of freed slices, %d freed slices forgotten\n", count(r.Deleted), count(r.FreedDel), r.FreedGone)
		if r.Reprieved > 0 {
			fmt.Fprintf(w, "Kept        %d objects whose slice was committed while gc ran\n", r.Reprieved)
		}
	}
	printGCDamage(w, r)
	return nil
}

// printGCDamage lists missing objects, problems and failed deletes.
func printGCDamage(w io.Writer, r *gc.Report) {
	if r.MissingN > 0 {
		fmt.Fprintf(w, "DAMAGE      %d objects missing in %d slices:\n", r.MissingN, len(r.Missing))
		for _, m := range r.Missing {
			fmt.Fprintf(w, "  inode %d chunk %d slice %d: %v\n", m.Ino, m.Chunk, m.Slice, m.Keys)
		}
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "PROBLEM     %s\n", p)
	}
	for _, f := range r.Failures {
		fmt.Fprintf(w, "FAILED      %s\n", f)
	}
}

// gcSample formats a few example keys.
func gcSample(keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	return fmt.Sprintf("\n            e.g. %v", keys)
}
