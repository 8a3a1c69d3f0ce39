package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"shoal/internal/console"
	"shoal/internal/meta"
	"shoal/internal/volume"
)

// consoleFlags configure a web console, of `shoal console` or of a mount.
type consoleFlags struct {
	listen    string
	tokenFile string
	reports   string
}

// register adds the flags, named with prefix ("" for shoal console,
// "console-" for mount, whose address flag is --console).
func (c *consoleFlags) register(fl *pflag.FlagSet, prefix, listenName, listenDefault, listenUsage string) {
	fl.StringVar(&c.listen, listenName, listenDefault, listenUsage)
	fl.StringVar(&c.tokenFile, prefix+"token-file", "", "file holding the token that enables the console's write actions (default: read-only)")
	fl.StringVar(&c.reports, prefix+"reports", "", "directory of benchmark reports ('shoal bench --html DIR/NAME.html') the console lists and serves")
}

// token reads the token file: "" without one.
func (c *consoleFlags) token() (string, error) {
	if c.tokenFile == "" {
		return "", nil
	}
	raw, err := os.ReadFile(c.tokenFile)
	if err != nil {
		return "", withCode(ExitUsage, fmt.Errorf("console token: %w", err))
	}
	tok := strings.TrimSpace(string(raw))
	if tok == "" {
		return "", withCode(ExitUsage, fmt.Errorf("console token: %s is empty", c.tokenFile))
	}
	return tok, nil
}

// start serves a console of eng on c.listen in the background until ctx
// ends; a no-op without an address.
func (c *consoleFlags) start(ctx context.Context, eng meta.Engine, f meta.Format, logger *slog.Logger) error {
	if c.listen == "" {
		return nil
	}
	srv, ln, err := c.open(eng, f, logger)
	if err != nil {
		return err
	}
	logger.Info("web console listening", "addr", "http://"+ln.Addr().String()+"/", "writable", c.tokenFile != "")
	go func() {
		if err := srv.Serve(ctx, ln); err != nil {
			logger.Error("web console stopped", "err", err)
		}
	}()
	return nil
}

func (c *consoleFlags) open(eng meta.Engine, f meta.Format, logger *slog.Logger) (*console.Server, net.Listener, error) {
	tok, err := c.token()
	if err != nil {
		return nil, nil, err
	}
	if c.reports != "" {
		if st, err := os.Stat(c.reports); err != nil || !st.IsDir() {
			return nil, nil, withCode(ExitUsage, fmt.Errorf("console: --reports %s is not a directory", c.reports))
		}
	}
	ln, err := console.Listen(c.listen)
	if err != nil {
		return nil, nil, withCode(ExitUsage, err) // as --metrics: a taken or bad address
	}
	srv := console.New(console.Config{Engine: eng, Format: f, ReportsDir: c.reports, Token: tok, Logger: logger})
	return srv, ln, nil
}

func newConsoleCmd() *cobra.Command {
	c := &consoleFlags{}
	cmd := &cobra.Command{
		Use:   "console META-URL",
		Short: "Serve a volume's web console (capacity, mounts, slow operations, maintenance)",
		Long: `Serve a web console of the volume whose metadata engine META-URL names:
capacity and inodes against their limits and quotas; every live mount with
its host, version, uptime, heartbeat age, operations per second, latency,
open files and locks; the slowest recent operations; when fsck, gc and
backups last ran and how they ended; and the benchmark reports in --reports.
The same figures are served as JSON at /api/status.

The console is read-only unless --token-file names a file holding a token:
then requests that carry it (the page's form, or "Authorization: Bearer
TOKEN") may reclaim dead mounts' sessions at once. Any mount serves the
same console with --console ADDR.

It runs until SIGINT or SIGTERM.`,
		Example: `  shoal console sqlite:///var/lib/shoal/meta.db --listen 127.0.0.1:9470
  shoal console redis://db1:6379/1 --listen 0.0.0.0:9470 --token-file /etc/shoal/console.token --reports /var/lib/shoal/reports`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runConsole(cmd, args[0], c) },
	}
	c.register(cmd.Flags(), "", "listen", "127.0.0.1:9470", "address to serve the console on (host:port)")
	return cmd
}

// runConsole serves the console until a signal.
func runConsole(cmd *cobra.Command, metaURL string, c *consoleFlags) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	eng, f, err := volume.Load(ctx, metaURL)
	if err != nil {
		return loadError(err, metaURL)
	}
	defer eng.Close()
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
	srv, ln, err := c.open(eng, f, logger)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Console of volume %s at http://%s/\n", f.Name, ln.Addr())
	if err := srv.Serve(ctx, ln); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
