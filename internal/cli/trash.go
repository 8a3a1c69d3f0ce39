package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"shoal/internal/meta"
	"shoal/internal/volume"
)

// newTrashCmd is `shoal trash` with days, list, restore and empty.
func newTrashCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trash",
		Short: "Keep deleted files for a while, list and restore them",
		Long: `With the trash on (shoal format --trash-days N, or shoal trash days), removing
the last name of a file or symlink (rm, or mv over it) moves it to
/.trash/YYYY-MM-DD-HH/ (the hour of the deletion, UTC) as
<parent inode>-<inode>-<name>. Files there still count in the volume's
usage (df, status) until the mounts' cleaners delete hours older than
trash_days, or 'shoal trash empty' does. Only root may enter /.trash, and
nothing can be created there; rm inside it deletes for good.
docs/admin.md, "Trash", has the details.`,
		Example: `  shoal trash days sqlite:///var/lib/shoal/meta.db 1
  shoal trash list sqlite:///var/lib/shoal/meta.db
  shoal trash restore sqlite:///var/lib/shoal/meta.db 2024-05-01-13/12-345-report.txt
  shoal trash restore sqlite:///var/lib/shoal/meta.db --all --hour 2024-05-01-13
  shoal trash empty sqlite:///var/lib/shoal/meta.db --older-than 12h`,
	}
	cmd.AddCommand(newTrashDaysCmd(), newTrashListCmd(), newTrashRestoreCmd(), newTrashEmptyCmd())
	return cmd
}

// withTrash opens the volume's engine for fn.
func withTrash(ctx context.Context, metaURL string, fn func(meta.Trash, meta.Engine, meta.Format) error) error {
	eng, f, err := volume.Load(ctx, metaURL)
	if err != nil {
		return loadError(err, metaURL)
	}
	defer eng.Close()
	tr, ok := eng.(meta.Trash)
	if !ok {
		return errors.New("trash: this metadata engine keeps no trash")
	}
	return fn(tr, eng, f)
}

func newTrashDaysCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "days META-URL N",
		Short: "Keep deleted files N days (1 is usual; 0 turns the trash off)",
		Long: `Set how many days deleted files stay in /.trash (the volume's trash_days).
Running mounts follow within a few seconds, without a remount. 0 turns the
trash off: files are deleted at once again, and what the trash holds stays
until 'shoal trash empty' (the cleaners leave it alone while it is off).`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			days, err := strconv.Atoi(args[1])
			if err != nil || days < 0 {
				return withCode(ExitUsage, fmt.Errorf("trash days: %q is not a number of days (0 or more)", args[1]))
			}
			return withTrash(cmd.Context(), args[0], func(tr meta.Trash, _ meta.Engine, f meta.Format) error {
				if err := tr.SetTrashDays(cmd.Context(), days); err != nil {
					return fmt.Errorf("trash days: %w", err)
				}
				w := cmd.OutOrStdout()
				fmt.Fprintf(w, "volume %q: trash %s; running mounts follow within a few seconds\n", f.Name, trashSetting(days))
				if days == 0 {
					if ents, err := tr.ListTrash(cmd.Context()); err == nil && len(ents) > 0 {
						fmt.Fprintf(w, "the trash still holds %d files: 'shoal trash empty' deletes them\n", len(ents))
					}
				}
				return nil
			})
		},
	}
}

// trashSetting describes trash_days for people.
func trashSetting(days int) string {
	switch days {
	case 0:
		return "off"
	case 1:
		return "on, deleted files kept 1 day"
	}
	return fmt.Sprintf("on, deleted files kept %d days", days)
}

// trashItem is one entry as list prints it (JSON keys in snake_case).
type trashItem struct {
	Entry   string    `json:"entry"` // HOUR/NAME, as restore takes it
	Path    string    `json:"path"`  // where it was deleted from
	Type    string    `json:"type"`
	Size    uint64    `json:"size"`
	Deleted time.Time `json:"deleted"`
	Ino     meta.Ino  `json:"ino"`
}

func newTrashListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list META-URL",
		Short: "List the files in the trash, with where they were deleted from",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withTrash(cmd.Context(), args[0], func(tr meta.Trash, eng meta.Engine, _ meta.Format) error {
				ents, err := tr.ListTrash(cmd.Context())
				if err != nil {
					return fmt.Errorf("trash list: %w", err)
				}
				items := make([]trashItem, 0, len(ents))
				for _, te := range ents {
					items = append(items, trashItem{Entry: te.Hour + "/" + te.Name, Path: origPath(cmd.Context(), eng, te),
						Type: typeName(te.Type), Size: te.Size, Deleted: time.Unix(0, te.Deleted).UTC(), Ino: te.Ino})
				}
				return printTrash(cmd.OutOrStdout(), items, asJSON)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// origPath is where a trash entry was deleted from, as well as can be told.
func origPath(ctx context.Context, eng meta.Engine, te meta.TrashEntry) string {
	if te.Parent == 0 {
		return "(unknown)"
	}
	if _, err := eng.Getattr(ctx, te.Parent); err != nil {
		return fmt.Sprintf("(directory inode %d, gone)/%s", te.Parent, te.OrigName)
	}
	return path.Join(pathOf(ctx, eng, te.Parent), te.OrigName)
}

func typeName(t meta.Type) string {
	if t == meta.TypeSymlink {
		return "symlink"
	}
	return "file"
}

func printTrash(w io.Writer, items []trashItem, asJSON bool) error {
	if asJSON {
		return printJSON(w, jsonList(items))
	}
	if len(items) == 0 {
		fmt.Fprintln(w, "the trash is empty")
		return nil
	}
	fmt.Fprintf(w, "%-20s %10s  %-40s %s\n", "DELETED (UTC)", "SIZE", "ENTRY", "FROM")
	for _, it := range items {
		fmt.Fprintf(w, "%-20s %10s  %-40s %s\n", it.Deleted.Format("2006-01-02 15:04:05"), humanBytes(int64(it.Size)), it.Entry, it.Path)
	}
	return nil
}

func newTrashRestoreCmd() *cobra.Command {
	var all bool
	var hour string
	cmd := &cobra.Command{
		Use:   "restore META-URL ENTRY... | --all [--hour YYYY-MM-DD-HH]",
		Short: "Put files from the trash back where they were deleted from",
		Long: `Put trash entries back under their original directory with their original
name. ENTRY is HOUR/NAME as 'shoal trash list' prints it (or NAME with
--hour). A name that is taken now gets the alternative NAME.restored-INODE
beside it, and a file whose directory is gone goes to the volume's root
under that name: nothing is overwritten, and the command says where each
file went. --all restores every entry (of one hour with --hour).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return withCode(ExitUsage, errors.New("trash restore: give META-URL"))
			}
			if all == (len(args) > 1) {
				return withCode(ExitUsage, errors.New("trash restore: give entries or --all, not both or neither"))
			}
			if _, ok := meta.TrashHour(hour); hour != "" && !ok {
				return withCode(ExitUsage, fmt.Errorf("trash restore: --hour %q is not YYYY-MM-DD-HH", hour))
			}
			return withTrash(cmd.Context(), args[0], func(tr meta.Trash, eng meta.Engine, _ meta.Format) error {
				return runTrashRestore(cmd.Context(), cmd.OutOrStdout(), tr, eng, args[1:], hour)
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "restore every entry (of --hour, if given)")
	cmd.Flags().StringVar(&hour, "hour", "", "the hour directory, YYYY-MM-DD-HH (UTC)")
	return cmd
}

func runTrashRestore(ctx context.Context, w io.Writer, tr meta.Trash, eng meta.Engine, entries []string, hour string) error {
	targets, err := restoreTargets(ctx, tr, entries, hour)
	if err != nil {
		return err
	}
	failed := 0
	for _, e := range targets {
		r, err := tr.RestoreTrash(ctx, e[0], e[1])
		if errors.Is(err, syscall.ENOENT) {
			err = errors.New("no such entry in the trash")
		}
		if err != nil {
			fmt.Fprintf(w, "%s/%s: not restored: %s\n", e[0], e[1], userMessage(err))
			failed++
			continue
		}
		where := path.Join(pathOf(ctx, eng, r.Parent), r.Name)
		if r.Moved {
			fmt.Fprintf(w, "%s/%s -> %s (%s)\n", e[0], e[1], where, r.Reason)
		} else {
			fmt.Fprintf(w, "%s/%s -> %s\n", e[0], e[1], where)
		}
	}
	if failed > 0 {
		return fmt.Errorf("trash restore: %d of %d entries not restored", failed, len(targets))
	}
	return nil
}

// restoreTargets turns the arguments into (hour, name) pairs: the named
// entries, or every entry (of hour) when none are named.
func restoreTargets(ctx context.Context, tr meta.Trash, entries []string, hour string) ([][2]string, error) {
	var out [][2]string
	for _, e := range entries {
		h, name, ok := strings.Cut(strings.TrimPrefix(e, "/.trash/"), "/")
		if !ok {
			h, name = hour, e
		}
		if h == "" || name == "" {
			return nil, withCode(ExitUsage, fmt.Errorf("trash restore: %q is not HOUR/NAME (or give --hour)", e))
		}
		out = append(out, [2]string{h, name})
	}
	if len(entries) > 0 {
		return out, nil
	}
	ents, err := tr.ListTrash(ctx)
	if err != nil {
		return nil, fmt.Errorf("trash restore: %w", err)
	}
	for _, te := range ents {
		if hour == "" || te.Hour == hour {
			out = append(out, [2]string{te.Hour, te.Name})
		}
	}
	return out, nil
}

func newTrashEmptyCmd() *cobra.Command {
	var older string
	cmd := &cobra.Command{
		Use:   "empty META-URL",
		Short: "Delete files from the trash for good",
		Long: `Delete the files in the trash for good (with --older-than, those of the hour
directories that ended at least that long ago), freeing their space. The
data of a file still open somewhere goes at its last close.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			before := time.Now().Add(24 * time.Hour) // every hour, the current one too
			if older != "" {
				d, err := parseAge(older)
				if err != nil {
					return withCode(ExitUsage, fmt.Errorf("trash empty: --older-than: %w", err))
				}
				before = time.Now().Add(-d)
			}
			return withTrash(cmd.Context(), args[0], func(tr meta.Trash, _ meta.Engine, _ meta.Format) error {
				n, err := tr.EmptyTrash(cmd.Context(), before)
				if err != nil {
					return fmt.Errorf("trash empty: %w (%d files deleted before it failed)", err, n)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted %d files from the trash\n", n)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&older, "older-than", "", "only hours that ended this long ago: a Go duration (90m, 12h) or days (2d)")
	return cmd
}

// parseAge reads a duration in Go syntax or a whole number of days ("2d").
func parseAge(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days < 0 {
			return 0, fmt.Errorf("%q is not a duration", s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	return d, nil
}
