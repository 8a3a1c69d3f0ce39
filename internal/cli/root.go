package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"shoal/internal/secret"
)

// Version is the shoal release, reported by --version and in sessions.
var Version = "0.1.0-dev"

// Main runs the shoal command line with args (args[0] is the program name)
// and returns the process exit code.
func Main(args []string) int {
	if isMountHelper(args) {
		return mountHelperMain(args)
	}
	return run(args, os.Stdout)
}

// run runs the command line args with its standard output going to out.
func run(args []string, out io.Writer) int {
	root := newRootCmd()
	root.SetOut(out)
	root.SetArgs(args[1:])
	err := root.Execute()
	if err != nil && !errors.Is(err, errReported) {
		fmt.Fprintf(os.Stderr, "shoal: %s\n", userMessage(err))
	}
	return exitCodeOf(err)
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "shoal",
		Short: "Shoal: a distributed POSIX file system on a database and an object store",
		Long: `Shoal mounts one file tree on many machines. Metadata lives in a database
(SQLite embedded by default; PostgreSQL or Redis across machines) and file
data in an object store (a local directory by default; S3 across machines).

Start with 'shoal up' to create and mount the embedded default volume.`,
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	var passwordFile string
	root.PersistentFlags().StringVar(&passwordFile, "meta-password-file", "",
		"read the metadata engine's password from this file (mode 600; or set "+secret.PasswordEnv+")")
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return prepareSecrets(passwordFile) }
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return withCode(ExitUsage, fmt.Errorf("%w (see '%s --help')", err, c.CommandPath()))
	})
	root.AddCommand(
		newUpCmd(),
		newFormatCmd(),
		newMountCmd(),
		newUmountCmd(),
		newStatusCmd(),
		newConsoleCmd(),
		newFsckCmd(),
		newGCCmd(),
		newDumpCmd(),
		newLoadCmd(),
		newClaimsCmd(),
		newQuotaCmd(),
		newSnapshotCmd(),
		newCloneCmd(),
		newTrashCmd(),
		newBackupCmd(),
		newRestoreCmd(),
		newKeyCmd(),
		newBenchCmd(),
		newStatsCmd(),
		newInstallCmd(),
	)
	root.InitDefaultCompletionCmd()
	tidyCommands(root)
	return root
}

// prepareSecrets registers the secrets of the environment for masking,
// and makes the password in path (if any) the engine password of this
// process and of the mount's background child, through the environment
// variable the engines read.
func prepareSecrets(path string) error {
	secret.Register(os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN"), os.Getenv("SHOAL_S3_SECRET_KEY"))
	if path == "" {
		secret.EnvPassword() // registers it for masking
		return nil
	}
	pw, err := secret.PasswordFile(path)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	secret.Register(pw)
	return os.Setenv(secret.PasswordEnv, pw)
}
