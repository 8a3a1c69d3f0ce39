package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"shoal/internal/meta"
	"shoal/internal/volume"
)

func newStatusCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status META-URL",
		Short: "Show a volume's settings and usage",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			eng, f, err := volume.Load(cmd.Context(), args[0])
			if err != nil {
				return DatabaseHint(err, args[0])
			}
			defer eng.Close()
			st, err := eng.Statfs(cmd.Context())
			if err != nil {
				return err
			}
			var sessions []meta.SessionInfo
			if s, ok := eng.(meta.Sessions); ok {
				if sessions, err = s.ListSessions(cmd.Context()); err != nil {
					return err
				}
			}
			cu, cerr := measureCompression(cmd.Context(), f)
			if asJSON {
				return printStatusJSON(cmd.OutOrStdout(), statusJSON{Format: f, Usage: st, Compression: cu, Sessions: sessions})
			}
			printStatus(cmd.OutOrStdout(), f, st)
			printCompression(cmd.OutOrStdout(), f, cu, cerr)
			printSessions(cmd.OutOrStdout(), sessions)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

type statusJSON struct {
	Format      meta.Format              `json:"format"`
	Usage       meta.Statfs              `json:"usage"`
	Compression *volume.CompressionUsage `json:"compression,omitempty"`
	Sessions    []meta.SessionInfo       `json:"sessions"`
}

// statusSample is how many block objects status lists to measure the
// compression ratio: about a hundred List calls, a second or two on S3.
const statusSample = 100_000

// measureCompression measures the compression ratio of a compressed
// volume from a listing of (up to statusSample of) its block objects: the
// data length is in each key, the stored size in the listing, so nothing
// is read. Nil for a volume without compression.
func measureCompression(ctx context.Context, f meta.Format) (*volume.CompressionUsage, error) {
	if f.Compression == "" {
		return nil, nil
	}
	raw, err := volume.OpenObjects(ctx, f, nil)
	if err != nil {
		return nil, err
	}
	u, err := volume.MeasureCompression(ctx, raw, statusSample)
	if err != nil {
		return nil, err
	}
	return &u, nil
}

// printCompression prints the compression line.
func printCompression(w io.Writer, f meta.Format, u *volume.CompressionUsage, err error) {
	switch {
	case f.Compression == "":
		fmt.Fprintf(w, "Compression none\n")
	case err != nil:
		fmt.Fprintf(w, "Compression %s (ratio unknown: %v)\n", f.Compression, err)
	case u.Stored == 0:
		fmt.Fprintf(w, "Compression %s (no blocks stored yet)\n", f.Compression)
	default:
		scope := "all"
		if !u.Complete {
			scope = "the first"
		}
		fmt.Fprintf(w, "Compression %s, ratio %.2f (%s of block data in %s stored; %s %d block objects)\n",
			f.Compression, u.Ratio, humanBytes(u.Data), humanBytes(u.Stored), scope, u.Objects)
	}
}

func printStatusJSON(w io.Writer, s statusJSON) error {
	s.Sessions = jsonList(s.Sessions)
	return printJSON(w, s)
}

// printSessions lists the live mounts.
func printSessions(w io.Writer, sessions []meta.SessionInfo) {
	fmt.Fprintf(w, "Mounts      %d\n", len(sessions))
	for _, s := range sessions {
		fmt.Fprintf(w, "  #%-4d %s:%s  pid %d  version %s  since %s  last heartbeat %s ago\n",
			s.ID, s.Host, s.Mountpoint, s.PID, s.Version, s.Started.Format("2006-01-02 15:04:05"),
			time.Since(s.Heartbeat).Round(time.Second))
	}
}

func printStatus(w io.Writer, f meta.Format, st meta.Statfs) {
	fmt.Fprintf(w, "Volume      %s (uuid %s)\n", f.Name, f.UUID)
	fmt.Fprintf(w, "Format      version %d, created %s\n", f.Version, f.Created.Format("2006-01-02 15:04:05 MST"))
	fmt.Fprintf(w, "Storage     %s %s\n", f.Storage, f.Bucket)
	fmt.Fprintf(w, "Block size  %s\n", humanBytes(int64(f.BlockSize)))
	fmt.Fprintf(w, "Used space  %s of %s\n", humanBytes(int64(st.UsedSpace)), limit(st.TotalSpace, f.Capacity != 0))
	fmt.Fprintf(w, "Inodes      %d of %s\n", st.UsedInodes, limitCount(st.TotalInodes, f.Inodes != 0))
	fmt.Fprintf(w, "Trash       %s\n", trashSetting(f.TrashDays))
}

func limit(n uint64, set bool) string {
	if !set {
		return "unlimited"
	}
	return humanBytes(int64(n))
}

func limitCount(n uint64, set bool) string {
	if !set {
		return "unlimited"
	}
	return fmt.Sprint(n)
}
