package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"shoal/internal/bench/progress"
	"shoal/internal/fsck"
	"shoal/internal/meta"
	"shoal/internal/object"
	"shoal/internal/volume"
)

// fsckFlags are the flags of shoal fsck.
type fsckFlags struct {
	repair      bool
	zeroDamaged bool
	noVerify    bool
	force       bool
	jsonOut     bool
	progress    string
	secret      secretFlags
}

// newFsckCmd is `shoal fsck`.
func newFsckCmd() *cobra.Command {
	f := &fsckFlags{}
	cmd := &cobra.Command{
		Use:   "fsck META-URL",
		Short: "Check a volume's metadata and every data block it refers to",
		Long: `Check a volume end to end: the metadata engine's invariants (directory
entries, link counts, orphans, slice reference counts, usage counters) and,
for every slice a file refers to, that each block object exists in the
object store, has the right size and passes its checksums (every block is
read in full; --no-verify-data checks presence and size only).

Files that read a missing or corrupt block are listed by path with the
byte ranges affected. Objects no file refers to are counted as leaked: they
are garbage, not damage, and 'shoal gc' deletes them.

With --repair, the engine fixes the metadata problems it can (and fsck says
what it did). Damaged file data is only reported, unless --zero-damaged is
given too: then the damaged ranges become holes that read as zeros. Repair
is meant for a volume no client has mounted; it refuses while a mount's
session is alive unless --force.

Exit status: 0 clean (leaked objects allowed), 3 damage left unrepaired,
1 the check could not finish.`,
		Example: `  shoal fsck sqlite:///var/lib/shoal/meta.db
  shoal fsck --no-verify-data --json sqlite:///var/lib/shoal/meta.db
  shoal fsck --repair sqlite:///var/lib/shoal/meta.db`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runFsck(cmd, args[0], f) },
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.repair, "repair", false, "fix what can be fixed safely, and say what was done")
	fl.BoolVar(&f.zeroDamaged, "zero-damaged", false, "with --repair: turn file ranges whose blocks are missing or corrupt into holes (zeros)")
	fl.BoolVar(&f.noVerify, "no-verify-data", false, "check that blocks exist with the right size, without reading them")
	fl.BoolVar(&f.force, "force", false, "repair even though a mount of the volume seems alive")
	fl.BoolVar(&f.jsonOut, "json", false, "print the report as JSON on stdout")
	fl.StringVar(&f.progress, "progress", "auto", "progress on stderr: auto (live on a terminal; elsewhere a line for each phase that took over 1s), always, never")
	fl.Lookup("progress").NoOptDefVal = "always"
	f.secret.register(fl)
	return cmd
}

// runFsck opens the volume's engine and store and runs the check.
func runFsck(cmd *cobra.Command, metaURL string, f *fsckFlags) error {
	if f.zeroDamaged && !f.repair {
		return withCode(ExitUsage, errors.New("fsck: --zero-damaged needs --repair"))
	}
	disp, err := gcDisplay(cmd.ErrOrStderr(), f.progress)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	ctx := cmd.Context()
	eng, vf, err := volume.Load(ctx, metaURL)
	if err != nil {
		return loadError(err, metaURL)
	}
	defer eng.Close()
	if f.repair && !f.force {
		if err := refuseLiveMounts(cmd, eng); err != nil {
			return err
		}
	}
	store, err := volume.OpenObjects(ctx, vf, nil)
	if err != nil {
		return fmt.Errorf("fsck: %w", err)
	}
	o := fsck.Options{Repair: f.repair, ZeroDamaged: f.zeroDamaged, VerifyData: !f.noVerify,
		BlockSize: vf.BlockSize, Progress: &fsck.Progress{}, SizeOK: volume.StoredSizeOK(vf)}
	if o.VerifyData {
		// Reading blocks of an encrypted volume needs its key.
		if o.Blocks, err = fsckBlocks(store, vf, &f.secret); err != nil {
			return err
		}
	}
	stop := trackPhases(disp, "fsck", o.Progress.Snapshot)
	started := time.Now()
	rep, err := fsck.Run(ctx, eng, store, o)
	stop()
	recordFsck(eng, started, rep, f.repair, err)
	if rep != nil {
		if perr := printFsck(cmd.OutOrStdout(), rep, f.jsonOut); perr != nil && err == nil {
			err = perr
		}
	}
	if err != nil {
		return loadError(err, metaURL)
	}
	if rep.Damage() {
		return withCode(ExitDamage, fmt.Errorf("fsck: the volume is damaged: %d metadata problems and %d files with damaged data left unrepaired", rep.MetaUnrepaired(), rep.DataUnrepaired()))
	}
	return nil
}

// fsckBlocks returns the store fsck verifies blocks through.
func fsckBlocks(store object.Store, vf meta.Format, sf *secretFlags) (object.Store, error) {
	key, err := volume.DataKey(vf, sf.secret())
	if err != nil {
		return nil, fmt.Errorf("fsck: %w (or check without reading data: --no-verify-data)", err)
	}
	return volume.BlockStore(store, vf, key)
}

// loadError classifies an error from opening or reading a volume: an
// unformatted volume is ExitNotFound, a corrupt database gets its hint.
func loadError(err error, metaURL string) error {
	if errors.Is(err, meta.ErrNotFormatted) {
		return withCode(ExitNotFound, err)
	}
	return DatabaseHint(err, metaURL)
}

// liveWithin is how recent a session's heartbeat must be for repair to
// treat its mount as alive.
const liveWithin = 2 * time.Minute

// refuseLiveMounts fails when a session of the volume heartbeated lately.
func refuseLiveMounts(cmd *cobra.Command, eng meta.Engine) error {
	ss, ok := eng.(meta.Sessions)
	if !ok {
		return nil
	}
	list, err := ss.ListSessions(cmd.Context())
	if err != nil {
		return fmt.Errorf("fsck: listing sessions: %w", err)
	}
	var live []string
	for _, s := range list {
		if time.Since(s.Heartbeat) < liveWithin {
			live = append(live, fmt.Sprintf("%s:%s (pid %d)", s.Host, s.Mountpoint, s.PID))
		}
	}
	if len(live) == 0 {
		return nil
	}
	return fmt.Errorf("fsck: refusing to repair a volume that is mounted: %s (unmount it, or wait %v after a crash, or use --force)", strings.Join(live, ", "), liveWithin)
}

// trackPhases shows a phased progress source on d until stop is called.
func trackPhases(d *progress.Display, label string, snap func() (string, int64, int64)) (stop func()) {
	if d == nil {
		return func() {}
	}
	var mu sync.Mutex
	var last progress.State
	finish := func(now time.Time) {
		if last.Phase != "" {
			last.End = now
			d.PhaseDone(last)
		}
	}
	d.Track(label, func() (progress.State, bool) {
		phase, done, total := snap()
		mu.Lock()
		defer mu.Unlock()
		if phase != last.Phase {
			finish(time.Now())
			last = progress.State{Phase: phase, Unit: "ops/s", Start: time.Now()}
		}
		last.Done, last.Total = done, total
		return last, phase != ""
	})
	return func() {
		d.Stop()
		mu.Lock()
		defer mu.Unlock()
		finish(time.Now())
	}
}

// printFsck writes the report as text or JSON.
func printFsck(w io.Writer, r *fsck.Report, asJSON bool) error {
	if asJSON {
		return printJSON(w, r)
	}
	m := r.Meta
	count := func(c fsck.Count) string { return fmt.Sprintf("%d objects, %s", c.Objects, humanBytes(c.Bytes)) }
	fmt.Fprintf(w, "Metadata    %d inodes (%d directories, %d files), %d entries, %d slice records: %d problems\n",
		m.Inodes, m.Dirs, m.Files, m.Entries, m.Slices, len(m.Problems))
	for _, p := range m.Problems {
		kind := "PROBLEM"
		if fsck.CounterDrift(p) {
			kind = "note   " // expected after a crash or on a mounted volume
		}
		fmt.Fprintf(w, "  %s   %s\n", kind, p)
	}
	verb := "present and sized right (not read: --no-verify-data)"
	if r.Verified {
		verb = fmt.Sprintf("read and verified: %s", count(r.Read))
	}
	fmt.Fprintf(w, "Data        %d slices, %d blocks referenced; %s\n", r.Slices, r.Blocks, verb)
	fmt.Fprintf(w, "Objects     %s: live %s\n", count(r.Objects), count(r.Live))
	fmt.Fprintf(w, "  leaked    %s (no file refers to them; 'shoal gc' deletes them)\n", count(r.Leaked))
	fmt.Fprintf(w, "  freed     %s (of deleted data, awaiting the cleaner)\n", count(r.Freed))
	if r.Prepared.Objects > 0 {
		fmt.Fprintf(w, "  prepared  %d empty block names made ahead of writes (a running mount keeps some; a killed mount's are deleted by 'shoal gc')\n", r.Prepared.Objects)
	}
	if r.Odd.Objects > 0 || r.Foreign.Objects > 0 {
		fmt.Fprintf(w, "  odd       %s; foreign %s (kept)\n", count(r.Odd), count(r.Foreign))
	}
	printFsckDamage(w, r)
	return nil
}

// printFsckDamage lists damaged blocks, affected files, repairs and
// failures, and the verdict.
func printFsckDamage(w io.Writer, r *fsck.Report) {
	for _, b := range r.Damaged {
		fmt.Fprintf(w, "DAMAGE      block %s (slice %d block %d): %s", b.Key, b.Slice, b.Index, b.Kind)
		if b.Detail != "" {
			fmt.Fprintf(w, ": %s", b.Detail)
		}
		if b.Shadowed {
			fmt.Fprint(w, " (shadowed: no file reads it)")
		}
		fmt.Fprintln(w)
	}
	for _, f := range r.Files {
		paths := strings.Join(f.Paths, ", ")
		if paths == "" {
			paths = "(unlinked)"
		}
		state := "reads there fail with EIO"
		if f.Zeroed {
			state = "zeroed"
		}
		fmt.Fprintf(w, "FILE        inode %d %s: %s at %s\n", f.Ino, paths, state, rangesText(f.Ranges))
	}
	for _, s := range r.Repairs {
		fmt.Fprintf(w, "REPAIRED    %s\n", s)
	}
	for _, s := range r.Failures {
		fmt.Fprintf(w, "FAILED      %s\n", s)
	}
	switch {
	case r.Damage():
		fmt.Fprintf(w, "Result      DAMAGED: %d metadata problems, %d files with damaged data unrepaired\n", r.MetaUnrepaired(), r.DataUnrepaired())
	case len(r.Failures) > 0:
		fmt.Fprintln(w, "Result      INCOMPLETE: some blocks could not be read")
	default:
		fmt.Fprintln(w, "Result      clean")
	}
}

// rangesText formats byte ranges as "[off, +len)" list.
func rangesText(rs []fsck.Range) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("[%d, +%d)", r.Off, r.Len)
	}
	return strings.Join(parts, " ")
}
