package console

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"shoal/internal/meta"
	"shoal/internal/secret"
)

// Config is what a console serves.
type Config struct {
	// Engine is an open engine of the volume; Format its settings.
	Engine meta.Engine
	Format meta.Format
	// ReportsDir holds the benchmark reports (`shoal bench --html`)
	// the console lists and serves; "" for none.
	ReportsDir string
	// Token enables the write actions for requests that carry it; ""
	// keeps the console read-only.
	Token  string
	Logger *slog.Logger
}

// Server serves the console pages.
type Server struct {
	cfg Config
	mux *http.ServeMux
}

// New returns a console for cfg.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /{$}", s.page)
	s.mux.HandleFunc("GET /api/status", s.apiStatus)
	s.mux.HandleFunc("GET /reports/{name}", s.report)
	s.mux.HandleFunc("POST /action/reclaim", s.reclaim)
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	s.mux.ServeHTTP(w, r)
}

// Listen binds addr; Serve then serves on the listener until ctx ends.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	return ln, nil
}

// Serve serves s on ln until ctx is done.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(c)
	}()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// queryTimeout bounds the engine reads of one page.
const queryTimeout = 10 * time.Second

func (s *Server) status(w http.ResponseWriter, r *http.Request) (Status, bool) {
	ctx, cancel := context.WithTimeout(r.Context(), queryTimeout)
	defer cancel()
	st, err := s.collect(ctx)
	if err != nil {
		s.cfg.Logger.Warn("console: reading the volume failed", "err", secret.Mask(err.Error()))
		http.Error(w, "reading the volume failed: "+secret.Message(err), http.StatusServiceUnavailable)
		return st, false
	}
	return st, true
}

func (s *Server) apiStatus(w http.ResponseWriter, r *http.Request) {
	st, ok := s.status(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(st)
}

func (s *Server) report(w http.ResponseWriter, r *http.Request) {
	path := reportPath(s.cfg.ReportsDir, r.PathValue("name"))
	if path == "" {
		http.NotFound(w, r)
		return
	}
	// The reports are self-contained pages with their own inline script
	// and styles: serve them under their own policy.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:")
	http.ServeFile(w, r, path)
}

// authorized reports whether r carries the token, as "Authorization:
// Bearer TOKEN" or a form field "token". Never without a token set.
func (s *Server) authorized(r *http.Request) bool {
	if s.cfg.Token == "" {
		return false
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		got = r.PostFormValue("token")
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Token)) == 1
}

// reclaim ends the sessions that outlived their own timeout now, as the
// next heartbeat of any mount would: their locks and open files are
// released. Live sessions are never touched.
func (s *Server) reclaim(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		http.Error(w, "forbidden: this action needs the console's token", http.StatusForbidden)
		return
	}
	ss, ok := s.cfg.Engine.(meta.Sessions)
	if !ok {
		http.Error(w, "this engine keeps no sessions", http.StatusNotImplemented)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	n, err := ss.ReclaimSessions(ctx, meta.LegacySessionTimeout)
	if err != nil {
		http.Error(w, "reclaim failed: "+secret.Message(err), http.StatusInternalServerError)
		return
	}
	s.cfg.Logger.Info("console: reclaimed dead sessions", "sessions", n, "from", r.RemoteAddr)
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int{"reclaimed": n})
		return
	}
	http.Redirect(w, r, fmt.Sprintf("/?reclaimed=%d", n), http.StatusSeeOther)
}
