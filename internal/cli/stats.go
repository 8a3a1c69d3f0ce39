package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"shoal/internal/metrics"
	"shoal/internal/rundir"
)

type statsFlags struct {
	once     bool
	jsonOut  bool
	interval time.Duration
	addr     string // --metrics: the endpoint, in place of a mountpoint
}

func newStatsCmd() *cobra.Command {
	var f statsFlags
	cmd := &cobra.Command{
		Use:   "stats {MOUNTPOINT | --metrics ADDR}",
		Short: "Show what a mount is doing, live (needs the mount's --metrics)",
		Long: `Show a live, top-like view of one mount: FUSE operations per second and their
mean latency, read and write throughput, metadata engine transactions and
retries, object store requests and their latency, the read cache's hit ratio,
the write buffer, open files, locks, backlogs and the session heartbeat.

It reads the mount's own Prometheus metrics, so the mount must have been
started with --metrics ADDR (e.g. 'shoal mount --metrics 127.0.0.1:9567 ...').
Given a mountpoint, it finds the address where the mount recorded it: any
user finds a mount by root, other users' mounts only their owner. Given
--metrics ADDR instead, it reads that endpoint (any mount's, on any host).
With --once it prints the totals since the mount started and exits; add
--json for scripts.`,
		Example: `  shoal stats /mnt/shoal
  shoal stats /mnt/shoal --once --json
  shoal stats --metrics 127.0.0.1:9567`,
		Args: func(cmd *cobra.Command, args []string) error {
			if f.addr != "" && len(args) > 0 {
				return withCode(ExitUsage, errors.New("stats: give a MOUNTPOINT or --metrics ADDR, not both"))
			}
			if f.addr != "" {
				return nil
			}
			return exactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			mp := ""
			if len(args) == 1 {
				mp = args[0]
			}
			return runStats(cmd, mp, f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.once, "once", false, "print the totals since the mount started once, and exit")
	fl.BoolVar(&f.jsonOut, "json", false, "with --once: print the totals as JSON")
	fl.DurationVar(&f.interval, "interval", time.Second, "how often the live view refreshes")
	fl.StringVar(&f.addr, "metrics", "", "read the metrics endpoint at ADDR (host:port, as given to 'shoal mount --metrics') instead of a mountpoint's")
	return cmd
}

// runStats finds the mount's metrics endpoint (mp's, or f.addr when mp
// is "") and shows it.
func runStats(cmd *cobra.Command, mp string, f statsFlags) error {
	if f.jsonOut && !f.once {
		return withCode(ExitUsage, errors.New("stats: --json needs --once"))
	}
	if f.interval <= 0 {
		return withCode(ExitUsage, fmt.Errorf("stats: --interval %v must be positive", f.interval))
	}
	addr := f.addr
	if mp == "" {
		mp = addr
	} else {
		var err error
		if addr, err = metricsAddr(mp); err != nil {
			return err
		}
	}
	out := cmd.OutOrStdout()
	if f.once {
		s, err := scrape(cmd.Context(), addr)
		if err != nil {
			return err
		}
		if f.jsonOut {
			return printJSON(out, s)
		}
		renderStats(out, mp, metrics.Snapshot{}, s, time.Duration(s.Uptime*float64(time.Second)), true)
		return nil
	}
	return liveStats(cmd.Context(), out, mp, addr, f.interval)
}

// metricsAddr returns the address the mount at mp serves metrics at,
// from the file the mount recorded it in (in its owner's public runtime
// directory: internal/rundir), or says how to get one.
func metricsAddr(mp string) (string, error) {
	abs, err := filepath.Abs(mp)
	if err != nil {
		return "", err
	}
	owner, mounted := mountOwner(abs)
	if !mounted {
		// A file left by a mount that was killed says nothing.
		return "", withCode(ExitNotFound, fmt.Errorf("stats: nothing is mounted at %s", abs))
	}
	if owner < 0 {
		owner = os.Geteuid()
	}
	path, ok := rundir.PublicPathOf(owner, abs, metricsSuffix)
	if !ok {
		return "", fmt.Errorf("stats: the mount at %s is uid %d's, whose metrics address only that user (or the mount's log) can tell: pass it with 'shoal stats --metrics ADDR'", abs, owner)
	}
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("stats: reading the metrics address of the mount at %s: %w (or pass it with 'shoal stats --metrics ADDR')", abs, err)
	}
	return "", fmt.Errorf("stats: the mount at %s serves no metrics: remount it with --metrics 127.0.0.1:PORT (e.g. 'shoal umount %s', then 'shoal mount --metrics 127.0.0.1:9567 META-URL %s')", abs, abs, abs)
}

// scrape reads one Snapshot from the endpoint at addr.
func scrape(ctx context.Context, addr string) (metrics.Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return metrics.Snapshot{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return metrics.Snapshot{}, fmt.Errorf("stats: no answer from the mount's metrics at %s (is the mount still running?): %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return metrics.Snapshot{}, fmt.Errorf("stats: the metrics endpoint at %s answered %s", addr, resp.Status)
	}
	return metrics.Parse(resp.Body)
}

// liveStats redraws the view every interval until interrupted.
func liveStats(ctx context.Context, out io.Writer, mp, addr string, interval time.Duration) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	prev, err := scrape(ctx, addr)
	if err != nil {
		return err
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			cur, err := scrape(ctx, addr)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			fmt.Fprint(out, "\033[H\033[2J")
			renderStats(out, mp, prev, cur, now.Sub(last), false)
			prev, last = cur, now
		}
	}
}
