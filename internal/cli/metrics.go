package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"shoal/internal/fusefs"
	"shoal/internal/meta"
	"shoal/internal/metrics"
	"shoal/internal/rundir"
	"shoal/internal/volume"
)

// mountMetrics is a mount's metrics endpoint (--metrics): the registry,
// and the listener, bound before the volume opens so that a taken port
// fails the mount at once. A nil *mountMetrics is a mount without metrics;
// its methods then add nothing.
type mountMetrics struct {
	reg *metrics.Registry
	ln  net.Listener
}

// listenMetrics binds addr (host:port; port 0 picks a free one), or
// returns nil for "".
func listenMetrics(addr string) (*mountMetrics, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, withCode(ExitUsage, fmt.Errorf("--metrics %s: %w", addr, err))
	}
	return &mountMetrics{reg: metrics.New(fusefs.OpNames()), ln: ln}, nil
}

// storeHook is what the volume puts over its object store backend and
// tells of its retries.
func (m *mountMetrics) storeHook() volume.StoreHook {
	if m == nil {
		return nil // a nil interface, not a nil *Registry in one
	}
	return m.reg
}

var _ volume.StoreHook = (*metrics.Registry)(nil)

// observer is what fusefs tells of every request.
func (m *mountMetrics) observer() fusefs.Observer {
	if m == nil {
		return nil // a nil interface, not a nil *Registry in one
	}
	return m.reg
}

// serve exports vol's own counters, serves /metrics, and records the
// address for `shoal stats mp` in the public runtime directory (readable
// by every user: internal/rundir). The returned func stops it.
func (m *mountMetrics) serve(vol *volume.Volume, mp string, logger *slog.Logger) (stop func()) {
	if m == nil {
		return func() {}
	}
	src := metrics.Sources{Data: vol.Data.Stats, VFS: vol.FS.Stats}
	if c, ok := vol.Engine.(meta.TxnCounter); ok {
		src.Engine = c.TxnStats
	}
	m.reg.Watch(src)
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.reg.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics endpoint stopped", "err", err)
		}
	}()
	path := rundir.PublicPath(mp, metricsSuffix)
	if _, err := rundir.EnsurePublic(); err != nil {
		logger.Warn("cannot record the metrics address for 'shoal stats'", "err", err)
	} else if err := os.WriteFile(path, []byte(m.ln.Addr().String()+"\n"), 0o644); err != nil {
		logger.Warn("cannot record the metrics address for 'shoal stats'", "file", path, "err", err)
	}
	logger.Info("serving metrics", "url", "http://"+m.ln.Addr().String()+"/metrics")
	return func() {
		_ = os.Remove(path)
		_ = srv.Close()
	}
}

// close releases the listener if serve never ran (the mount failed).
func (m *mountMetrics) close() {
	if m != nil {
		_ = m.ln.Close()
	}
}

// metricsSuffix names a mount's metrics address file in the public
// runtime directory.
const metricsSuffix = ".metrics"
