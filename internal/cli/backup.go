package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"shoal/internal/archive"
	"shoal/internal/object"
	"shoal/internal/progress"
	"shoal/internal/volume"
)

// backupFlags are the flags of shoal backup and its subcommands.
type backupFlags struct {
	path, name, progress string
	keep, prune, asJSON  bool
	jobs                 int
	secret               secretFlags
}

// newBackupCmd is `shoal backup` with list, verify and delete.
func newBackupCmd() *cobra.Command {
	f := &backupFlags{}
	cmd := &cobra.Command{
		Use:   "backup META-URL DEST",
		Short: "Back up a live volume (a tree's metadata at one instant, and its blocks) to a directory or S3 bucket",
		Long: `Copy the volume (or --path in it) as it is at one instant, while mounts
keep writing, to DEST: a directory, or an S3 bucket URL (s3://, http://
or https://; credentials from the environment as for format). The backup
holds the tree's metadata (a dump of just that tree, as a volume of its
own, read in one consistent read of the metadata) and every block it
references; 'shoal restore' makes a mountable volume from it on any
engine. If a block the tree referenced is deleted from the volume before
it is copied (the file was rewritten meanwhile), the backup is taken
again from a snapshot, which holds its blocks.

Backups are incremental: DEST keeps blocks under the volume's own keys,
and only the blocks DEST lacks are copied (what DEST holds is read from
the newest backup's block index). A backup appears whole or not at all
(its manifest is written last). A DEST holds the backups of one volume.

The volume's blocks are copied as stored (checksummed, compressed,
encrypted), so an encrypted volume's backup stays encrypted; its dump is
sealed with the volume's key, so give the volume's secret.`,
		Example: `  shoal backup sqlite:///var/lib/shoal/meta.db /backup/shoal
  shoal backup --path /site1 --name site1-nightly postgres://shoal@db/shoal s3://backups/shoal
  shoal backup list /backup/shoal
  shoal backup verify /backup/shoal
  shoal backup delete --prune /backup/shoal backup-20261122T010000Z`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return runBackup(cmd, args[0], args[1], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.path, "path", "/", "the tree to back up, from the volume's root")
	fl.StringVar(&f.name, "name", "", "the backup's name (default backup-<UTC time>)")
	fl.BoolVar(&f.keep, "keep-snapshot", false, "take the backup from a snapshot and keep it (/.snapshots/NAME)")
	addBackupCommon(cmd, f)
	f.secret.register(fl)
	cmd.AddCommand(newBackupListCmd(), newBackupVerifyCmd(), newBackupDeleteCmd())
	return cmd
}

// addBackupCommon adds --jobs and --progress.
func addBackupCommon(cmd *cobra.Command, f *backupFlags) {
	fl := cmd.Flags()
	fl.IntVar(&f.jobs, "jobs", archive.DefaultJobs, "blocks copied or read at a time")
	fl.StringVar(&f.progress, "progress", "auto", "progress on stderr: auto (live on a terminal; elsewhere a line for each phase that took over 1s), always, never")
	fl.Lookup("progress").NoOptDefVal = "always"
}

// openDest opens a backup destination: an S3 URL or a directory. It
// returns the store and its (storage, location).
func openDest(ctx context.Context, dest string) (object.Store, [2]string, error) {
	where := [2]string{"file", dest}
	for _, scheme := range []string{"s3://", "http://", "https://"} {
		if strings.HasPrefix(dest, scheme) {
			where[0] = "s3"
		}
	}
	if where[0] == "file" {
		abs, err := filepath.Abs(dest)
		if err != nil {
			return nil, where, withCode(ExitUsage, err)
		}
		where[1] = abs
	}
	s, err := volume.OpenStore(ctx, where[0], where[1], nil)
	if err != nil {
		return nil, where, fmt.Errorf("backup destination: %w", err)
	}
	return s, where, nil
}

// runBackup takes a backup.
func runBackup(cmd *cobra.Command, metaURL, dest string, f *backupFlags) error {
	if f.name != "" {
		if err := archive.CheckName(f.name); err != nil {
			return withCode(ExitUsage, err)
		}
	}
	disp, err := gcDisplay(cmd.ErrOrStderr(), f.progress)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	eng, vf, err := volume.Load(ctx, metaURL)
	if err != nil {
		return loadError(err, metaURL)
	}
	defer eng.Close()
	src, err := volume.OpenObjects(ctx, vf, nil)
	if err != nil {
		return err
	}
	ds, _, err := openDest(ctx, dest)
	if err != nil {
		return err
	}
	p := &progress.Progress{}
	stop := trackPhases(disp, "backup", p.Snapshot)
	start := time.Now()
	m, err := archive.Create(ctx, archive.Source{Engine: eng, Format: vf, Store: src, Secret: f.secret.secret()}, ds,
		archive.Options{Name: f.name, Path: f.path, KeepSnapshot: f.keep, Jobs: f.jobs, Progress: p})
	stop()
	if err != nil {
		return backupErr(err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "backup %s of %s:%s: %d inodes, %s of files, %d blocks (%d copied, %s; the rest were in %s), in %s\n",
		m.Name, m.Volume, m.Path, m.Inodes, humanBytes(m.Bytes), m.Blocks, m.Copied, humanBytes(m.CopiedBytes), ds,
		time.Since(start).Round(time.Millisecond))
	return nil
}

// backupErr words archive errors with their exit codes.
func backupErr(err error) error {
	switch {
	case errors.Is(err, archive.ErrNotFound), errors.Is(err, syscall.ENOENT):
		return withCode(ExitNotFound, fmt.Errorf("backup: %w", err))
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EINVAL):
		return withCode(ExitUsage, fmt.Errorf("backup: --path must name a directory of the volume, outside /.snapshots: %w", err))
	case errors.Is(err, volume.ErrNoSecret):
		return withCode(ExitUsage, fmt.Errorf("backup: %w", err))
	}
	return fmt.Errorf("backup: %w", err)
}

func newBackupListCmd() *cobra.Command {
	f := &backupFlags{}
	cmd := &cobra.Command{
		Use:   "list DEST",
		Short: "List the backups in DEST, oldest first",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ds, _, err := openDest(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			all, err := archive.List(cmd.Context(), ds)
			if err != nil {
				return backupErr(err)
			}
			return printBackups(cmd.OutOrStdout(), all, f.asJSON)
		},
	}
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the manifests as JSON")
	return cmd
}

func printBackups(w io.Writer, all []archive.Manifest, asJSON bool) error {
	if asJSON {
		return printJSON(w, jsonList(all))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVOLUME\tPATH\tCREATED\tINODES\tFILES\tBLOCKS\tCOPIED")
	for _, m := range all {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%d\t%d\n", m.Name, m.Volume, m.Path, m.Created.Format(time.RFC3339),
			m.Inodes, humanBytes(m.Bytes), m.Blocks, m.Copied)
	}
	return tw.Flush()
}

func newBackupVerifyCmd() *cobra.Command {
	f := &backupFlags{}
	cmd := &cobra.Command{
		Use:   "verify DEST [NAME]",
		Short: "Check that a backup (default: the newest) is whole: its dump and every block, read back and checksummed",
		Long: `Read backup NAME (default: the newest) in DEST back: its dump against the
manifest's checksum, then every block the dump references, through the
volume's checksums, compression and encryption. Missing and corrupt
blocks are listed; the exit status is 3 when the backup is damaged.`,
		Args: rangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error { return runBackupVerify(cmd, args, f) },
	}
	addBackupCommon(cmd, f)
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the report as JSON")
	f.secret.register(cmd.Flags())
	return cmd
}

func runBackupVerify(cmd *cobra.Command, args []string, f *backupFlags) error {
	disp, err := gcDisplay(cmd.ErrOrStderr(), f.progress)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	ds, _, err := openDest(ctx, args[0])
	if err != nil {
		return err
	}
	m, err := archive.Find(ctx, ds, argOr(args, 1))
	if err != nil {
		return backupErr(err)
	}
	p := &progress.Progress{}
	stop := trackPhases(disp, "verify", p.Snapshot)
	r, err := archive.Verify(ctx, ds, m, f.secret.secret(), f.jobs, p)
	stop()
	if err != nil {
		return backupErr(err)
	}
	w := cmd.OutOrStdout()
	if f.asJSON {
		if err := printJSON(w, r); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "backup %s: %d blocks, %d read back, %d missing, %d corrupt\n", r.Name, r.Blocks, r.Read, len(r.Missing), len(r.Corrupt))
		if r.Dump != "" {
			fmt.Fprintf(w, "DUMP        %s\n", r.Dump)
		}
		for _, k := range r.Missing {
			fmt.Fprintf(w, "MISSING     %s\n", k)
		}
		for _, c := range r.Corrupt {
			fmt.Fprintf(w, "CORRUPT     %s\n", c)
		}
	}
	if r.Damaged() {
		return withCode(ExitDamage, fmt.Errorf("backup verify: backup %s is damaged: it cannot be restored whole", r.Name))
	}
	return nil
}

func argOr(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

func newBackupDeleteCmd() *cobra.Command {
	f := &backupFlags{}
	cmd := &cobra.Command{
		Use:   "delete DEST NAME",
		Short: "Delete a backup (with --prune, also the blocks no other backup references)",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ds, _, err := openDest(ctx, args[0])
			if err != nil {
				return err
			}
			if args[1] == "latest" || args[1] == "" {
				return withCode(ExitUsage, errors.New("backup delete: name the backup to delete"))
			}
			pr, err := archive.Delete(ctx, ds, args[1], f.prune, f.secret.secret())
			if err != nil {
				return backupErr(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted backup %s\n", args[1])
			if f.prune {
				fmt.Fprintf(cmd.OutOrStdout(), "pruned %d blocks (%s) no other backup references; kept %d younger than %s\n",
					pr.Objects, humanBytes(pr.Bytes), pr.Young, archive.PruneGrace)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&f.prune, "prune", false, "also delete the blocks no remaining backup references")
	f.secret.register(cmd.Flags())
	return cmd
}

// rangeArgs is cobra.RangeArgs with a usage exit code.
func rangeArgs(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return withCode(ExitUsage, fmt.Errorf("%s takes %d to %d arguments, got %d (usage: %s)", cmd.Name(), lo, hi, len(args), cmd.UseLine()))
		}
		return nil
	}
}

// restoreFlags are the flags of shoal restore.
type restoreFlags struct {
	backupFlags
	storage, bucket, volName string
}

func newRestoreCmd() *cobra.Command {
	f := &restoreFlags{}
	cmd := &cobra.Command{
		Use:   "restore DEST[:NAME] META-URL",
		Short: "Make a new volume from a backup, in an empty engine of any kind and a new bucket",
		Long: `Make a new, mountable volume from backup NAME in DEST (default: the newest;
or --name): the blocks it references are copied from DEST into the new
volume's bucket (--storage, --bucket; for SQLite, file storage beside the
database by default), then its metadata is restored into the empty engine
META-URL (a new SQLite file, an empty PostgreSQL schema, an unused Redis
database) with a new uuid. The volume's root is the tree the backup took.
DEST is only read: the restored volume never writes there.

The restored volume keeps the backup's block size, compression and
encryption (its blocks are copied as stored): an encrypted volume's
backup restores with the same secret. An interrupted restore leaves the
engine unformatted: empty it and run the restore again into the same
bucket (the blocks copied already are kept).`,
		Example: `  shoal restore /backup/shoal sqlite:///var/lib/shoal/restored.db
  shoal restore /backup/shoal:backup-20261122T010000Z postgres://shoal@db/restored --storage s3 --bucket s3://restored`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return runRestore(cmd, args[0], args[1], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.name, "name", "", "the backup to restore (default: DEST:NAME's NAME, else the newest)")
	fl.StringVar(&f.storage, "storage", "file", "the new volume's object store: file or s3")
	fl.StringVar(&f.bucket, "bucket", "", "the new volume's bucket: a directory or URL (default for SQLite: objects beside the database)")
	fl.StringVar(&f.volName, "volume-name", "", "the new volume's name (default: the backed-up volume's)")
	addBackupCommon(cmd, &f.backupFlags)
	f.secret.register(fl)
	return cmd
}

// splitDest splits DEST[:NAME]; a URL's scheme colon is not a separator.
func splitDest(arg string) (dest, name string) {
	rest := arg
	scheme := ""
	if i := strings.Index(arg, "://"); i >= 0 {
		scheme, rest = arg[:i+3], arg[i+3:]
	}
	i := strings.LastIndexByte(rest, ':')
	if slash := strings.IndexByte(rest, '/'); scheme != "" && (slash < 0 || i < slash) {
		i = -1 // a URL's host:port
	}
	if i >= 0 && archive.CheckName(rest[i+1:]) == nil {
		return scheme + rest[:i], rest[i+1:]
	}
	return arg, ""
}

func runRestore(cmd *cobra.Command, destArg, metaURL string, f *restoreFlags) error {
	disp, err := gcDisplay(cmd.ErrOrStderr(), f.progress)
	if err != nil {
		return err
	}
	dest, name := splitDest(destArg)
	if f.name != "" {
		name = f.name
	}
	bucket := f.bucket
	if bucket == "" {
		dir, ok := strings.CutPrefix(metaURL, "sqlite://")
		if !ok || f.storage != "file" {
			return withCode(ExitUsage, fmt.Errorf("restore: --bucket is required for %s storage with this META-URL", f.storage))
		}
		bucket = filepath.Join(filepath.Dir(strings.SplitN(dir, "?", 2)[0]), "objects")
	}
	if f.storage == "file" {
		if bucket, err = filepath.Abs(bucket); err != nil {
			return withCode(ExitUsage, err)
		}
	}
	ctx := cmd.Context()
	ds, where, err := openDest(ctx, dest)
	if err != nil {
		return err
	}
	m, err := archive.Find(ctx, ds, name)
	if err != nil {
		return backupErr(err)
	}
	eng, err := volume.OpenEngine(ctx, metaURL)
	if err != nil {
		return DatabaseHint(err, metaURL)
	}
	defer eng.Close()
	if err := refuseFormatted(ctx, eng, metaURL); err != nil {
		return err
	}
	p := &progress.Progress{}
	stop := trackPhases(disp, "restore", p.Snapshot)
	vf, err := archive.Restore(ctx, ds, where, m, archive.Target{Engine: eng, Storage: f.storage, Bucket: bucket, Name: f.volName},
		f.secret.secret(), f.jobs, p)
	stop()
	if errors.Is(err, archive.ErrSameStore) {
		return withCode(ExitUsage, fmt.Errorf("restore: %w: give --bucket", err))
	}
	if err != nil {
		return backupErr(err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "restored backup %s (%s:%s, %d inodes, %s of files) as volume %q, uuid %s; its data is in %s %s\n",
		m.Name, m.Volume, m.Path, m.Inodes, humanBytes(m.Bytes), vf.Name, vf.UUID, vf.Storage, vf.Bucket)
	return nil
}
