package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"shoal/internal/fusefs"
	"shoal/internal/meta"
	"shoal/internal/opstat"
	"shoal/internal/secret"
	"shoal/internal/vfs"
	"shoal/internal/volume"
)

// mountOptions are the flags of mount and up.
type mountOptions struct {
	background      bool
	attrTimeout     time.Duration
	entryTimeout    time.Duration
	negativeTimeout time.Duration
	allowOther      bool
	debug           bool
	logFile         string
	bufferSize      int64
	cacheSize       int64
	cpuProfile      string
	strict          bool
	heartbeat       time.Duration
	sessionTimeout  time.Duration
	backupInterval  time.Duration // -1: the engine's default
	backupKeep      int
	flushTimeout    time.Duration
	deleteDelay     time.Duration
	metricsAddr     string
	secret          secretFlags
	supervise       bool
	upgrade         bool
	console         consoleFlags
}

func (o *mountOptions) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVarP(&o.background, "background", "d", false, "run in the background; return once the mount is ready")
	fl.DurationVar(&o.attrTimeout, "attr-timeout", time.Second, "how long the kernel caches file attributes")
	fl.DurationVar(&o.entryTimeout, "entry-timeout", time.Second, "how long the kernel caches names (bounds how late other mounts' renames and deletes are seen)")
	fl.DurationVar(&o.negativeTimeout, "negative-timeout", time.Second, "how long the kernel caches names that do not exist (0 = not cached)")
	fl.BoolVar(&o.allowOther, "allow-other", true, "let users other than the one who mounted use the mount (permissions still apply)")
	fl.BoolVar(&o.debug, "debug", false, "log every FUSE request")
	fl.StringVar(&o.logFile, "log", "", "log file (default: stderr, or a file in the temp dir with --background)")
	fl.BoolVar(&o.strict, "strict", false, "no kernel caching of names, attributes or pages: every open and stat asks the engine (slower; for workloads that poll files other machines change)")
	fl.DurationVar(&o.heartbeat, "heartbeat", 5*time.Second, "how often this mount tells the engine it is alive")
	fl.DurationVar(&o.sessionTimeout, "session-timeout", 60*time.Second, "how long a silent mount lives before other mounts release its locks and unlinked files (this mount's own, stored with its session; at least 3 heartbeats)")
	fl.DurationVar(&o.backupInterval, "backup-interval", -1, "how often to back up the metadata into the object store (meta-backup/); default 1h for SQLite, off for shared engines (back those up with their own tools or 'shoal dump'); 0 = off")
	fl.IntVar(&o.backupKeep, "backup-keep", 24, "how many metadata backups to keep")
	fl.DurationVar(&o.flushTimeout, "flush-timeout", 2*time.Minute, "how long close and fsync wait for an unreachable object store or engine before failing with EIO")
	fl.DurationVar(&o.deleteDelay, "delete-delay", 30*time.Second, "how long the objects of freed data (deleted or overwritten files) are kept before this mount deletes them, so that reads on other mounts finish")
	fl.StringVar(&o.metricsAddr, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9567; off by default); 'shoal stats MOUNTPOINT' reads them")
	fl.StringVar(&o.cpuProfile, "cpu-profile", "", "write a Go CPU profile of the mount process to this file (for diagnosing slowness)")
	o.bufferSize, o.cacheSize = 256<<20, 256<<20
	fl.Var(sizeFlag{&o.bufferSize}, "buffer-size", "write buffer: unflushed bytes before writes wait for uploads")
	fl.Var(sizeFlag{&o.cacheSize}, "cache-size", "in-memory read cache of blocks")
	o.secret.register(fl)
	fl.BoolVar(&o.supervise, "supervise", true, "keep the mount through a crash or an upgrade of its serving process: a small supervisor holds the kernel connection and starts a new server that takes it over (root only; false: one process, as before)")
	o.console.register(fl, "console-", "console", "", "serve the volume's web console on this address (host:port; see 'shoal console')")
}

func newMountCmd() *cobra.Command {
	var o mountOptions
	cmd := &cobra.Command{
		Use:   "mount META-URL MOUNTPOINT",
		Short: "Mount a volume (foreground until unmounted, or --background)",
		Long: `Mount the volume whose metadata engine META-URL names at MOUNTPOINT.

In the foreground (the default) the command serves the mount until it is
unmounted ('shoal umount MOUNTPOINT') or it receives SIGINT or SIGTERM, which
flush every buffered write and unmount. With --background it returns once the
mount is ready and logs to a file.`,
		Example: `  shoal mount sqlite:///var/lib/shoal/meta.db /mnt/shoal
  shoal mount sqlite:///var/lib/shoal/meta.db /mnt/shoal --background --entry-timeout 0`,
		Args: func(cmd *cobra.Command, args []string) error {
			if o.upgrade {
				return exactArgs(1)(cmd, args)
			}
			return exactArgs(2)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.upgrade {
				took, err := requestUpgrade(args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "upgraded the server of %s in %v\n", args[0], took)
				return nil
			}
			return runMount(cmd.Context(), args[0], args[1], o, cmd.OutOrStdout())
		},
	}
	o.register(cmd)
	cmd.Flags().BoolVar(&o.upgrade, "upgrade", false, "shoal mount --upgrade MOUNTPOINT: replace the running server of a supervised mount with this binary, keeping open files, locks and the mount")
	return cmd
}

// runMount mounts and serves, or starts a background child that does.
func runMount(ctx context.Context, metaURL, mp string, o mountOptions, out io.Writer) error {
	if role := os.Getenv(serveEnv); role != "" {
		abs, err := filepath.Abs(mp)
		if err != nil {
			return err
		}
		return serveSupervised(ctx, metaURL, abs, role, o)
	}
	abs, err := checkMountpoint(mp)
	if err != nil {
		return err
	}
	if err := checkFUSE(); err != nil {
		return err
	}
	ready := readyFromEnv()
	if o.background && ready == nil {
		return daemonize(metaURL, abs, o, out)
	}
	if o.supervise && os.Geteuid() == 0 {
		return supervise(metaURL, abs, o, ready)
	}
	err = serve(ctx, metaURL, abs, o, ready)
	if err != nil && ready != nil {
		ready.fail(err)
	}
	return err
}

// serve runs the mount in this process until it is unmounted.
func serve(ctx context.Context, metaURL, mp string, o mountOptions, ready *readyPipe) error {
	sv, err := prepare(ctx, metaURL, mp, o, 0)
	if err != nil {
		return err
	}
	defer sv.close()
	srv, err := fusefs.Mount(mp, sv.fsys, sv.mountConfig(o))
	if err != nil {
		_ = sv.vol.Close(ctx)
		return err
	}
	defer writePidFile(mp)()
	sv.log.Info("mounted", "volume", sv.vol.Format.Name, "mountpoint", mp, "pid", os.Getpid())
	if ready != nil {
		ready.ok()
	}
	stop := handleSignals(sv.vol, srv, sv.log)
	defer stop()
	notifyReady() // after the handler: systemd may stop the unit at once
	defer sv.runBackups(metaURL, o)()
	srv.Wait()
	sv.log.Info("unmounted; flushing and closing", "mountpoint", mp)
	return sv.vol.Close(context.Background())
}

// backupInterval resolves --backup-interval: by default hourly for the
// embedded SQLite engine (whose file has no other backup), off for shared
// engines.
func backupInterval(metaURL string, flag time.Duration) time.Duration {
	if flag >= 0 {
		return flag
	}
	if strings.HasPrefix(metaURL, "sqlite") {
		return time.Hour
	}
	return 0
}

// unmounter is what a signal needs of the FUSE server.
type unmounter interface{ Unmount() error }

// handleSignals flushes and unmounts on SIGINT/SIGTERM. If the mount is
// busy the unmount fails; the mount keeps serving and says so.
func handleSignals(vol *volume.Volume, srv unmounter, logger *slog.Logger) (stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	signal.Ignore(syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				logger.Info("signal: flushing and unmounting", "signal", sig.String())
				if err := vol.FS.Sync(context.Background()); err != nil {
					logger.Error("flush before unmount failed", "err", err)
				}
				if err := srv.Unmount(); err != nil {
					logger.Error("unmount failed; still serving (close the files in use, then signal again, or 'umount -l')", "err", err)
				}
			}
		}
	}()
	return func() { signal.Stop(sigs); close(done) }
}

// openLogger returns a text logger writing to path (stderr if empty).
func openLogger(path string, debug bool) (*slog.Logger, func(), error) {
	level := slog.LevelInfo
	if debug {
		level = slog.LevelDebug
	}
	var w io.Writer = os.Stderr
	closeFn := func() {}
	if path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("log file: %w", err)
		}
		w, closeFn = f, func() { f.Close() }
	}
	logger := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: maskAttr}))
	slog.SetDefault(logger)
	return logger, closeFn, nil
}

// maskAttr hides secrets in logged strings and errors.
func maskAttr(_ []string, a slog.Attr) slog.Attr {
	switch a.Value.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(secret.Mask(a.Value.String()))
	case slog.KindAny:
		if err, ok := a.Value.Any().(error); ok {
			a.Value = slog.StringValue(secret.Mask(err.Error()))
		}
	}
	return a
}

// startCPUProfile profiles the process until the returned func is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// sessionConfig describes this mount to the other clients of the volume.
func sessionConfig(mp string, o mountOptions, ops *opstat.Recorder) vfs.SessionConfig {
	host, _ := os.Hostname()
	return vfs.SessionConfig{
		Info: meta.SessionInfo{
			Host: host, Mountpoint: mp, Version: Version, PID: os.Getpid(), Started: time.Now(),
		},
		Heartbeat: o.heartbeat,
		Timeout:   o.sessionTimeout,
		Report:    ops.Report,
	}
}
