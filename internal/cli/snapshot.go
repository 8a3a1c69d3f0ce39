package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"shoal/internal/meta"
	"shoal/internal/volume"
)

// newSnapshotCmd is `shoal snapshot` with create, list, delete, restore.
func newSnapshotCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Take, list, delete and restore read-only snapshots",
		Long: `A snapshot is a read-only, point-in-time image of the whole volume or of
one tree in it, taken while mounts keep writing: it shows every file as it
was at one instant (other mounts' writes wait while it is taken, then go
on). It copies metadata only — blocks are shared and never rewritten — so
it takes time in proportion to the number of files, not their size, and
uses no space until the live files change.

Every mount shows snapshots under /.snapshots/NAME (writes there fail with
"Read-only file system"); copy files out with cp, or put a tree back with
restore. A snapshot is not counted in df or the volume's quotas; delete it
to let gc free the blocks only it still holds.`,
		Example: `  shoal snapshot create sqlite:///var/lib/shoal/meta.db nightly
  shoal snapshot create sqlite:///var/lib/shoal/meta.db site1-before-upgrade --path /site1
  shoal snapshot list sqlite:///var/lib/shoal/meta.db
  shoal snapshot restore sqlite:///var/lib/shoal/meta.db nightly --path /site1/uploads
  shoal snapshot delete sqlite:///var/lib/shoal/meta.db nightly`,
	}
	var createPath, restorePath string
	var asJSON bool
	create := snapshotSub("create META-URL NAME", "Take a snapshot of the volume (or of --path)", 2,
		func(ctx context.Context, w io.Writer, sn meta.Snapshots, args []string) error {
			start := time.Now()
			s, err := sn.CreateSnapshot(ctx, args[1], createPath)
			if errors.Is(err, syscall.ENOENT) {
				return withCode(ExitNotFound, fmt.Errorf("snapshot create: %s is not in the volume", createPath))
			}
			if err != nil {
				return snapshotErr("create", args[1], err)
			}
			fmt.Fprintf(w, "snapshot %s of %s: %d inodes, %s of files, taken in %s; it is at /.snapshots/%s in every mount\n",
				s.Name, s.Path, s.Inodes, humanBytes(s.Bytes), time.Since(start).Round(100*time.Microsecond), s.Name)
			return nil
		})
	create.Flags().StringVar(&createPath, "path", "/", "the tree to snapshot, from the volume's root")
	list := snapshotSub("list META-URL", "List snapshots", 1,
		func(ctx context.Context, w io.Writer, sn meta.Snapshots, _ []string) error {
			all, err := sn.ListSnapshots(ctx)
			if err != nil {
				return err
			}
			return printSnapshots(w, all, asJSON)
		})
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	del := snapshotSub("delete META-URL NAME", "Delete a snapshot (its blocks go once nothing else holds them)", 2,
		func(ctx context.Context, w io.Writer, sn meta.Snapshots, args []string) error {
			if err := sn.DeleteSnapshot(ctx, args[1]); err != nil {
				return snapshotErr("delete", args[1], err)
			}
			fmt.Fprintf(w, "deleted snapshot %s; 'shoal gc' or any mount's cleaner frees the blocks only it held\n", args[1])
			return nil
		})
	restore := snapshotSub("restore META-URL NAME", "Put a snapshot's tree (or --path in it) back in place", 2,
		func(ctx context.Context, w io.Writer, sn meta.Snapshots, args []string) error {
			if restorePath == "" || restorePath == "/" {
				if whole, err := wholeVolume(ctx, sn, args[1]); err != nil || whole {
					return firstError(err, withCode(ExitUsage, fmt.Errorf("snapshot restore: %s is a snapshot of the whole volume: give --path of a directory or file in it to restore (one top-level directory at a time)", args[1])))
				}
			}
			aside, err := sn.RestoreSnapshot(ctx, args[1], restorePath)
			if errors.Is(err, syscall.ENOENT) {
				return withCode(ExitNotFound, fmt.Errorf("snapshot restore: no snapshot %s, or no %s in it, or its directory is gone from the volume: %w", args[1], restorePath, err))
			}
			if err != nil {
				return snapshotErr("restore", args[1], err)
			}
			if aside != "" {
				fmt.Fprintf(w, "restored %s from snapshot %s; what was there is now %s beside it\n", restorePath, args[1], aside)
			} else {
				fmt.Fprintf(w, "restored %s from snapshot %s\n", restorePath, args[1])
			}
			return nil
		})
	restore.Flags().StringVar(&restorePath, "path", "", "the tree to restore, as a path in the snapshot (for a snapshot of the whole volume: from the volume's root)")
	cmd.AddCommand(create, list, del, restore)
	return cmd
}

type snapshotRun func(ctx context.Context, w io.Writer, sn meta.Snapshots, args []string) error

func snapshotSub(use, short string, n int, run snapshotRun) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  exactArgs(n),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if len(args) > 1 && meta.CheckName(args[1]) != nil {
				return withCode(ExitUsage, fmt.Errorf("snapshot: %q is not a valid snapshot name (a file name: no '/', not . or .., at most 255 bytes)", args[1]))
			}
			eng, _, err := volume.Load(ctx, args[0])
			if err != nil {
				return loadError(err, args[0])
			}
			defer eng.Close()
			sn, ok := eng.(meta.Snapshots)
			if !ok {
				return errors.New("snapshot: this metadata engine has no snapshots")
			}
			return run(ctx, cmd.OutOrStdout(), sn, args)
		},
	}
}

// snapshotErr words an engine error for the user.
func snapshotErr(op, name string, err error) error {
	switch {
	case errors.Is(err, syscall.EEXIST):
		return fmt.Errorf("snapshot %s: a snapshot named %s exists (or /.snapshots is taken by a file of the volume): choose another name", op, name)
	case errors.Is(err, syscall.ENOENT) && op != "create" && op != "restore":
		return withCode(ExitNotFound, fmt.Errorf("snapshot %s: no snapshot named %s ('shoal snapshot list' shows them)", op, name))
	case errors.Is(err, syscall.ENOENT):
		return withCode(ExitNotFound, fmt.Errorf("snapshot %s %s: no such file or directory in the volume: %w", op, name, err))
	case errors.Is(err, syscall.EINVAL):
		return withCode(ExitUsage, fmt.Errorf("snapshot %s: a snapshot cannot be taken of /.snapshots", op))
	}
	return fmt.Errorf("snapshot %s %s: %w", op, name, err)
}

func printSnapshots(w io.Writer, all []meta.Snapshot, asJSON bool) error {
	if asJSON {
		return printJSON(w, jsonList(all))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPATH\tCREATED\tINODES\tFILES")
	for _, s := range all {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.Name, s.Path,
			time.Unix(0, s.Created).UTC().Format(time.RFC3339), s.Inodes, humanBytes(s.Bytes))
	}
	return tw.Flush()
}

// wholeVolume reports whether snapshot name is of the whole volume.
func wholeVolume(ctx context.Context, sn meta.Snapshots, name string) (bool, error) {
	all, err := sn.ListSnapshots(ctx)
	if err != nil {
		return false, err
	}
	for _, s := range all {
		if s.Name == name {
			return s.Path == "/", nil
		}
	}
	return false, withCode(ExitNotFound, fmt.Errorf("snapshot restore: no snapshot named %s ('shoal snapshot list' shows them)", name))
}

// firstError returns the first non-nil error.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
