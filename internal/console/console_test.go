package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shoal/internal/meta"
	"shoal/internal/meta/kv/memkv"
	"shoal/internal/meta/kvmeta"
)

// newServer returns a console over a fresh in-memory volume with one
// session that published a report.
func newServer(t *testing.T, token, reports string) (*Server, meta.Engine) {
	t.Helper()
	eng := kvmeta.New(memkv.New(), kvmeta.Options{})
	t.Cleanup(func() { _ = eng.Close() })
	ctx := context.Background()
	f := meta.Format{Name: "vol", Storage: "s3", Bucket: "https://user:hunter2@s3.example/bkt", BlockSize: 1 << 20, Capacity: 1 << 30}
	if err := eng.Format(ctx, f, false); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.BeginSession(ctx, meta.SessionInfo{Host: "node1", Mountpoint: "/mnt/a", Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	eng.SetSessionReport(meta.SessionReport{Ops: 9, OpsPerSec: 3, Slow: []meta.SlowOp{
		{Op: "fsync", Duration: 20 * time.Millisecond}, {Op: "write", Duration: 90 * time.Millisecond}}})
	if err := eng.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	return New(Config{Engine: eng, Format: f, ReportsDir: reports, Token: token}), eng
}

func do(s *Server, req *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	return w
}

func TestAPIStatus(t *testing.T) {
	s, _ := newServer(t, "", "")
	w := do(s, httptest.NewRequest("GET", "/api/status", nil))
	var st Status
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatalf("%v: %s", err, w.Body)
	}
	if st.Usage.SpaceLimit != 1<<30 || st.Usage.UsedInodes != 1 || st.Usage.InodesLimit != 0 {
		t.Errorf("usage = %+v, want the 1 GiB limit, the root inode, no inode limit", st.Usage)
	}
	if len(st.Mounts) != 1 || st.Mounts[0].Host != "node1" || st.Mounts[0].Report == nil || st.Mounts[0].Report.Ops != 9 || st.Mounts[0].Dead {
		t.Fatalf("mounts = %+v", st.Mounts)
	}
	if len(st.Slow) != 2 || st.Slow[0].Op != "write" || st.Slow[0].Host != "node1" {
		t.Errorf("slow ops = %+v, want the write first", st.Slow)
	}
	if strings.Contains(w.Body.String(), "hunter2") || !strings.Contains(st.Volume.Bucket, "s3.example") {
		t.Errorf("bucket not masked: %s", st.Volume.Bucket)
	}
}

func TestPage(t *testing.T) {
	s, _ := newServer(t, "", "")
	w := do(s, httptest.NewRequest("GET", "/", nil))
	body := w.Body.String()
	if w.Code != 200 || !strings.Contains(body, `data-session="1"`) || !strings.Contains(body, "node1") {
		t.Fatalf("page: %d\n%s", w.Code, body)
	}
	for _, bad := range []string{"<script", `src="http`, `href="http`, "@import"} {
		if strings.Contains(body, bad) {
			t.Errorf("the page holds %q (no external asset, no script)", bad)
		}
	}
	if strings.Contains(body, "hunter2") {
		t.Errorf("the page shows the bucket password")
	}
	if strings.Contains(body, "action/reclaim") {
		t.Errorf("a read-only console offers an action")
	}
	if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("CSP = %q", csp)
	}
}

func TestActionNeedsToken(t *testing.T) {
	for _, c := range []struct {
		name, token, header, form string
		want                      int
	}{
		{"read-only console", "", "Bearer x", "", 403},
		{"read-only console, empty token", "", "Bearer ", "", 403},
		{"no token sent", "tok", "", "", 403},
		{"wrong token", "tok", "Bearer nope", "", 403},
		{"header", "tok", "Bearer tok", "", 303},
		{"form field", "tok", "", "tok", 303},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := newServer(t, c.token, "")
			req := httptest.NewRequest("POST", "/action/reclaim", strings.NewReader(url.Values{"token": {c.form}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if c.header != "" {
				req.Header.Set("Authorization", c.header)
			}
			if w := do(s, req); w.Code != c.want {
				t.Fatalf("status %d, want %d: %s", w.Code, c.want, w.Body)
			}
		})
	}
}

func TestReports(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "run1.html"), []byte("<p>report</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("no"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, _ := newServer(t, "", dir)
	if w := do(s, httptest.NewRequest("GET", "/reports/run1.html", nil)); w.Code != 200 || !strings.Contains(w.Body.String(), "report") {
		t.Errorf("report: %d %s", w.Code, w.Body)
	}
	for _, name := range []string{"secret.txt", "..%2Fsecret.html", ".hidden.html", "missing.html"} {
		if w := do(s, httptest.NewRequest("GET", "/reports/"+name, nil)); w.Code != 404 {
			t.Errorf("/reports/%s: %d, want 404", name, w.Code)
		}
	}
	if got := listReports(dir); len(got) != 1 || got[0].Name != "run1.html" {
		t.Errorf("listReports = %+v", got)
	}
}

// aheadEngine is an engine whose clock runs an hour ahead of the console's.
type aheadEngine struct{ *kvmeta.Engine }

func (e aheadEngine) EngineNow(ctx context.Context) (time.Time, error) {
	now, err := e.Engine.EngineNow(ctx)
	return now.Add(time.Hour), err
}

// TestHeartbeatAgeOnEngineClock checks that a heartbeat's age is read on
// the engine's clock, as reclaimers read it, not on the console's.
func TestHeartbeatAgeOnEngineClock(t *testing.T) {
	s, eng := newServer(t, "", "")
	s.cfg.Engine = aheadEngine{eng.(*kvmeta.Engine)}
	st, err := s.collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m := st.Mounts[0]; !m.Dead || m.HeartbeatAge < 59*time.Minute {
		t.Fatalf("a session silent for an hour on the engine's clock shows age %v, dead %v", m.HeartbeatAge, m.Dead)
	}
}

// failingEngine is an engine whose Statfs fails as a PostgreSQL engine
// does when its server is gone, naming its URL and password.
type failingEngine struct{ meta.Engine }

func (failingEngine) Statfs(context.Context) (meta.Statfs, error) {
	return meta.Statfs{}, errors.New("kvmeta: statfs: sqlkv: postgres://shoal:hunter2@db/shoal: connection refused")
}

// TestErrorPageMasked: a failure to read the volume is shown as the CLI
// shows it: the password masked, internal package names gone.
func TestErrorPageMasked(t *testing.T) {
	_, eng := newServer(t, "", "")
	s := New(Config{Engine: failingEngine{eng}, Format: meta.Format{Name: "vol"}})
	for _, path := range []string{"/", "/api/status"} {
		w := do(s, httptest.NewRequest("GET", path, nil))
		body := w.Body.String()
		if w.Code != http.StatusServiceUnavailable || strings.Contains(body, "hunter2") || strings.Contains(body, "sqlkv") ||
			strings.Contains(body, "kvmeta") || !strings.Contains(body, "statfs: postgres://shoal:xxxxx@db/shoal: connection refused") {
			t.Errorf("GET %s: %d %q", path, w.Code, body)
		}
	}
}
