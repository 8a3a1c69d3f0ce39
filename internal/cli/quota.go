package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/spf13/cobra"

	"shoal/internal/meta"
	"shoal/internal/volume"
)

// quotaFlags are the flags of shoal quota's subcommands.
type quotaFlags struct {
	path     string
	capacity int64
	inodes   uint64
}

// newQuotaCmd is `shoal quota` with set, get, list and delete.
func newQuotaCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quota",
		Short: "Set, show and remove directory quotas",
		Long: `Directory quotas limit the space and inodes of the tree under a directory
of the volume (the directory itself not counted). Past a limit, writes and
creates in the tree fail with EDQUOT ("Disk quota exceeded"); moving or
hard-linking an entry between trees under different quotas fails with
EXDEV, so mv copies and deletes instead. df on a directory inside the tree
shows the quota's size and usage.

--path is the directory inside the volume, from its root (e.g. /site1).
set counts what the tree already holds by walking it, which takes time
proportional to the tree; setting a quota again recounts. Mounts enforce a
new quota within a few seconds (docs/admin.md, "Quotas").`,
		Example: `  shoal quota set sqlite:///var/lib/shoal/meta.db --path /site1 --capacity 1G --inodes 10000
  shoal quota get sqlite:///var/lib/shoal/meta.db --path /site1
  shoal quota list sqlite:///var/lib/shoal/meta.db
  shoal quota delete sqlite:///var/lib/shoal/meta.db --path /site1`,
	}
	cmd.AddCommand(quotaSub("set", "Set or change a directory's limits (0: unlimited)", runQuotaSet, true),
		quotaSub("get", "Show a directory's limits and usage", runQuotaGet, false),
		quotaSub("delete", "Remove a directory's quota", runQuotaDelete, false),
		quotaSub("list", "Show every directory quota", runQuotaList, false))
	return cmd
}

type quotaRun func(ctx context.Context, w io.Writer, q meta.Quotas, eng meta.Engine, f *quotaFlags) error

// quotaSub builds one subcommand; limits says whether it takes them.
func quotaSub(name, short string, run quotaRun, limits bool) *cobra.Command {
	f := &quotaFlags{}
	cmd := &cobra.Command{
		Use:   name + " META-URL",
		Short: short,
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if name != "list" && f.path == "" {
				return withCode(ExitUsage, fmt.Errorf("quota %s: --path is required", name))
			}
			return withQuotas(cmd.Context(), args[0], func(q meta.Quotas, eng meta.Engine) error {
				return run(cmd.Context(), cmd.OutOrStdout(), q, eng, f)
			})
		},
	}
	fl := cmd.Flags()
	if name != "list" {
		fl.StringVar(&f.path, "path", "", "directory inside the volume, e.g. /site1")
	}
	if limits {
		fl.Var(sizeFlag{&f.capacity}, "capacity", "space limit of the tree, e.g. 1G (0: unlimited)")
		fl.Uint64Var(&f.inodes, "inodes", 0, "inode limit of the tree (0: unlimited)")
	}
	return cmd
}

// withQuotas opens the volume's engine for fn.
func withQuotas(ctx context.Context, metaURL string, fn func(meta.Quotas, meta.Engine) error) error {
	eng, _, err := volume.Load(ctx, metaURL)
	if err != nil {
		return DatabaseHint(err, metaURL)
	}
	defer eng.Close()
	q, ok := eng.(meta.Quotas)
	if !ok {
		return errors.New("quota: this metadata engine has no directory quotas")
	}
	return fn(q, eng)
}

func runQuotaSet(ctx context.Context, w io.Writer, q meta.Quotas, eng meta.Engine, f *quotaFlags) error {
	ino, err := resolveDir(ctx, eng, f.path)
	if err != nil {
		return err
	}
	got, err := q.SetQuota(ctx, ino, uint64(f.capacity), f.inodes)
	if err != nil {
		return fmt.Errorf("quota set %s: %w", f.path, err)
	}
	printQuotas(w, []meta.Quota{got}, map[meta.Ino]string{ino: f.path})
	return nil
}

func runQuotaGet(ctx context.Context, w io.Writer, q meta.Quotas, eng meta.Engine, f *quotaFlags) error {
	ino, err := resolveDir(ctx, eng, f.path)
	if err != nil {
		return err
	}
	got, err := q.GetQuota(ctx, ino)
	if errors.Is(err, syscall.ENODATA) {
		return fmt.Errorf("quota get: %s has no quota", f.path)
	}
	if err != nil {
		return fmt.Errorf("quota get %s: %w", f.path, err)
	}
	printQuotas(w, []meta.Quota{got}, map[meta.Ino]string{ino: f.path})
	return nil
}

func runQuotaDelete(ctx context.Context, w io.Writer, q meta.Quotas, eng meta.Engine, f *quotaFlags) error {
	ino, err := resolveDir(ctx, eng, f.path)
	if err != nil {
		return err
	}
	err = q.DeleteQuota(ctx, ino)
	if errors.Is(err, syscall.ENODATA) {
		return fmt.Errorf("quota delete: %s has no quota", f.path)
	}
	if err != nil {
		return fmt.Errorf("quota delete %s: %w", f.path, err)
	}
	fmt.Fprintf(w, "removed the quota of %s\n", f.path)
	return nil
}

func runQuotaList(ctx context.Context, w io.Writer, q meta.Quotas, eng meta.Engine, _ *quotaFlags) error {
	all, err := q.ListQuotas(ctx)
	if err != nil {
		return fmt.Errorf("quota list: %w", err)
	}
	paths := map[meta.Ino]string{}
	for _, x := range all {
		paths[x.Ino] = pathOf(ctx, eng, x.Ino)
	}
	printQuotas(w, all, paths)
	return nil
}

// resolveDir looks p up from the volume's root.
func resolveDir(ctx context.Context, eng meta.Engine, p string) (meta.Ino, error) {
	ino, err := meta.ResolvePath(ctx, eng, p)
	if err != nil {
		return 0, fmt.Errorf("quota: %s: %w", p, err)
	}
	return ino, nil
}

// pathOf is meta.PathOf's path, "(inode N)" where the chain breaks.
func pathOf(ctx context.Context, eng meta.Engine, ino meta.Ino) string {
	p, _ := meta.PathOf(ctx, eng, ino)
	return p
}

// printQuotas prints one line per quota: usage against limits.
func printQuotas(w io.Writer, qs []meta.Quota, paths map[meta.Ino]string) {
	fmt.Fprintf(w, "%-24s %12s %12s %10s %10s\n", "PATH", "USED", "CAPACITY", "INODES", "MAX-INODES")
	for _, q := range qs {
		capacity, inodes := "unlimited", "unlimited"
		if q.MaxSpace > 0 {
			capacity = humanBytes(int64(q.MaxSpace))
		}
		if q.MaxInodes > 0 {
			inodes = fmt.Sprint(q.MaxInodes)
		}
		fmt.Fprintf(w, "%-24s %12s %12s %10d %10s\n", paths[q.Ino], humanBytes(int64(q.UsedSpace)), capacity, q.UsedInodes, inodes)
	}
}
