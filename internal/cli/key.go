package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"shoal/internal/volume"
)

// newKeyCmd is `shoal key`, the key management of encrypted volumes.
func newKeyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "key",
		Short: "Manage the key of an encrypted volume",
	}
	cmd.AddCommand(newKeyRotateCmd())
	return cmd
}

// newKeyRotateCmd is `shoal key rotate`.
func newKeyRotateCmd() *cobra.Command {
	var cur, next secretFlags
	cmd := &cobra.Command{
		Use:   "rotate META-URL",
		Short: "Change the passphrase or key file of an encrypted volume (no data is rewritten)",
		Long: `Change the secret that opens an encrypted volume. The volume's data key,
unwrapped with the current passphrase or key file, is wrapped under the new
one and the settings are rewritten; no object changes, and running mounts keep
working. Afterwards only the new secret opens the volume. Metadata backups
and dumps made before keep the data key wrapped under the old secret.`,
		Example: `  shoal key rotate sqlite:///var/lib/shoal/meta.db --passphrase-file old.txt --new-passphrase-file new.txt`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if next.keyFile == "" && next.passFile == "" {
				return withCode(ExitUsage, fmt.Errorf("key rotate: give the new secret with --new-passphrase-file or --new-key-file"))
			}
			if err := volume.Rotate(cmd.Context(), args[0], cur.secret(), next.secret()); err != nil {
				return loadError(err, args[0])
			}
			fmt.Fprintln(cmd.OutOrStdout(), "rotated: the volume opens with the new secret only")
			return nil
		},
	}
	fl := cmd.Flags()
	cur.register(fl)
	fl.StringVar(&next.passFile, "new-passphrase-file", "", "file holding the new passphrase (its first line)")
	fl.StringVar(&next.keyFile, "new-key-file", "", "file whose bytes are the new key")
	return cmd
}
