package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"shoal/internal/meta"
	"shoal/internal/volume"
)

func newUpCmd() *cobra.Command {
	var o mountOptions
	var dataDir string
	cmd := &cobra.Command{
		Use:   "up [MOUNTPOINT]",
		Short: "Create (first time) and mount the embedded default volume in one step",
		Long: `Create the embedded default volume — SQLite metadata and a local object
directory under --data-dir — if it does not exist yet, and mount it at
MOUNTPOINT (default ~/shoal). Runs in the foreground until Ctrl-C or
'shoal umount', unless --background.`,
		Example: `  shoal up
  shoal up /mnt/shoal --data-dir /var/lib/shoal --background`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mp := filepath.Join(homeDir(), "shoal")
			if len(args) == 1 {
				mp = args[0]
			}
			return runUp(cmd, dataDir, mp, o)
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", defaultDataDir(), "where the volume's database and objects live")
	o.register(cmd)
	return cmd
}

func runUp(cmd *cobra.Command, dataDir, mp string, o mountOptions) error {
	dataDir, err := filepath.Abs(dataDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	metaURL := "sqlite://" + filepath.Join(dataDir, "meta.db")
	out := cmd.OutOrStdout()
	eng, _, err := volume.Load(cmd.Context(), metaURL)
	switch {
	case errors.Is(err, meta.ErrNotFormatted):
		f, err := volume.Format(cmd.Context(), metaURL, volume.FormatOptions{Name: "shoal"})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "created volume %q in %s\n", f.Name, dataDir)
	case err != nil:
		return err
	default:
		_ = eng.Close()
	}
	if err := os.MkdirAll(mp, 0o755); err != nil {
		return fmt.Errorf("mountpoint: %w", err)
	}
	fmt.Fprintf(out, "data dir:   %s\nmetadata:   %s\nmountpoint: %s\n", dataDir, metaURL, mp)
	if !o.background {
		fmt.Fprintln(out, "serving; press Ctrl-C or run 'shoal umount "+mp+"' to unmount")
	}
	return runMount(cmd.Context(), metaURL, mp, o, out)
}

func homeDir() string {
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	return "/"
}

// defaultDataDir is $SHOAL_DATA_DIR, else ~/.shoal.
func defaultDataDir() string {
	if d := os.Getenv("SHOAL_DATA_DIR"); d != "" {
		return d
	}
	return filepath.Join(homeDir(), ".shoal")
}
