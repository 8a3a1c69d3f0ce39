package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"shoal/internal/meta"
	"shoal/internal/secret"
	"shoal/internal/volume"
)

func newFormatCmd() *cobra.Command {
	var o volume.FormatOptions
	var blockSize, capacity int64
	var encrypt bool
	var sf secretFlags
	cmd := &cobra.Command{
		Use:   "format META-URL",
		Short: "Create a volume: its settings in the metadata engine, its data in an object store",
		Long: `Create a volume. META-URL names the metadata engine:
  sqlite:///var/lib/shoal/meta.db            embedded SQLite (one machine)
  postgres://user@host:5432/shoal            PostgreSQL (many machines)
  redis://host:6379/1                        Redis (many machines; also rediss://,
                                             redis+sentinel://, redis+cluster://)
The engine's password comes from SHOAL_META_PASSWORD, --meta-password-file
(mode 600) or the URL (user:pass@; masked in output, but briefly visible to
ps while the command starts).
The object store holds the file data:
  --storage file --bucket DIR                a local directory (with SQLite it
                                             defaults to "objects" beside the database)
  --storage s3 --bucket http://host:9000/b   any S3-compatible store; credentials from
                                             AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY,
                                             ~/.aws/credentials or an instance profile,
                                             never from the bucket URL

format checks that the object store is reachable and writable before it
writes anything, and refuses to overwrite an existing volume unless --force.`,
		Example: `  shoal format sqlite:///var/lib/shoal/meta.db
  SHOAL_META_PASSWORD=... AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... \
    shoal format postgres://shoal@db1:5432/shoal --storage s3 --bucket http://s3.lan:9000/shoal
  shoal format sqlite:///srv/meta.db --storage file --bucket /srv/objects --block-size 1M
  shoal format sqlite:///srv/meta.db --compress zstd
  shoal format sqlite:///srv/meta.db --trash-days 1`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.BlockSize, o.Capacity = int(blockSize), uint64(capacity)
			if !cmd.Flags().Changed("trash-days") {
				o.TrashDays = -1 // --force keeps the volume's; a new one has none
			} else if o.TrashDays < 0 {
				return withCode(ExitUsage, errors.New("format: --trash-days must be 0 (off) or more"))
			}
			if err := formatSecret(&o, encrypt, &sf); err != nil {
				return err
			}
			f, err := volume.Format(cmd.Context(), args[0], o)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "formatted volume %q (uuid %s)\n  metadata: %s\n  data:     %s %s (blocks of %s, compression %s)\nmount it with: shoal mount %s MOUNTPOINT\n",
				f.Name, f.UUID, secret.Mask(args[0]), f.Storage, secret.Mask(f.Bucket), humanBytes(int64(f.BlockSize)), compressionName(f), secret.Mask(args[0]))
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Name, "name", "", "volume name (default \"shoal\")")
	fl.StringVar(&o.Storage, "storage", "file", "object store kind: file or s3")
	fl.StringVar(&o.Bucket, "bucket", "", "object store location: a directory (file) or an endpoint URL with the bucket (s3)")
	fl.Var(sizeFlag{&blockSize}, "block-size", "bytes per block object, 4K to 4M (default 4M)")
	fl.Var(sizeFlag{&capacity}, "capacity", "space quota of the volume, e.g. 100G (default unlimited)")
	fl.Uint64Var(&o.Inodes, "inodes", 0, "inode quota of the volume (default unlimited)")
	fl.StringVar(&o.Compression, "compress", "none", "compress blocks: none, zstd or lz4 (incompressible blocks are stored as they are)")
	fl.IntVar(&o.TrashDays, "trash-days", 0, "keep deleted files in /.trash this many days; 1 is the usual value (default 0: off; see 'shoal trash')")
	fl.BoolVar(&o.Force, "force", false, "replace the settings of an existing volume (its files are kept)")
	fl.BoolVar(&encrypt, "encrypt", false, "encrypt every object at rest under a key wrapped by the passphrase or key file (docs/admin.md)")
	sf.register(fl)
	return cmd
}

// formatSecret reads the secret of an encrypted volume into o.
func formatSecret(o *volume.FormatOptions, encrypt bool, sf *secretFlags) error {
	if !encrypt {
		if sf.keyFile != "" || sf.passFile != "" {
			return withCode(ExitUsage, errors.New("format: --key-file and --passphrase-file need --encrypt"))
		}
		return nil
	}
	secret, err := sf.secret()()
	if err != nil {
		return fmt.Errorf("format --encrypt: %w", err)
	}
	o.Secret = secret
	return nil
}

// exactArgs is cobra.ExactArgs with a usage exit code.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return withCode(ExitUsage, fmt.Errorf("%s takes %d argument(s), got %d (usage: %s)", cmd.Name(), n, len(args), cmd.UseLine()))
		}
		return nil
	}
}

// humanBytes formats a byte count with a binary unit.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// compressionName names a volume's block compression for people.
func compressionName(f meta.Format) string {
	if f.Compression == "" {
		return "none"
	}
	return f.Compression
}
