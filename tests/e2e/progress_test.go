package e2e

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"shoal/internal/testutil"
	"shoal/tests/isolate"
)

// slowLister is a proxy in front of the test S3 server that, while on,
// holds every object listing for delay: fsck and gc then spend that long
// in their "listing objects" phase.
type slowLister struct {
	on    atomic.Bool
	delay time.Duration
	srv   *httptest.Server
}

func newSlowLister(t *testing.T, s3URL string, delay time.Duration) *slowLister {
	t.Helper()
	target, err := url.Parse(s3URL)
	if err != nil {
		t.Fatal(err)
	}
	target.Path = ""
	proxy := httputil.NewSingleHostReverseProxy(target)
	sl := &slowLister{delay: delay}
	sl.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sl.on.Load() && r.URL.Query().Has("list-type") {
			time.Sleep(sl.delay)
		}
		proxy.ServeHTTP(w, r) // the Host header stays the proxy's, which the request was signed for
	}))
	t.Cleanup(sl.srv.Close)
	return sl
}

// bucketURL is s3URL's bucket through the proxy.
func (sl *slowLister) bucketURL(t *testing.T, s3URL string) string {
	u, err := url.Parse(s3URL)
	if err != nil {
		t.Fatal(err)
	}
	return sl.srv.URL + u.Path
}

// TestProgressWhenSlow checks that fsck and gc show progress unasked
// when they take more than a second: a line per slow phase on a stderr
// that is not a terminal, a live line on a terminal, and nothing for a
// quick run.
func TestProgressWhenSlow(t *testing.T) {
	s3 := testutil.S3URL(t)
	sl := newSlowLister(t, s3, 1200*time.Millisecond)
	v := isolate.FormatS3(t, "", sl.bucketURL(t, s3))
	m := v.Mount(t)
	writeFile(t, m.Path("f"), randBytes(1, 64<<10), 0o644)
	m.Unmount(t)

	began := time.Now()
	quick := testutil.MustRun(t, "fsck", v.MetaURL)
	// A loaded machine can make even this fsck take a second, when
	// progress is due: only a run that was quick must show none.
	if took := time.Since(began); strings.Contains(quick.Stderr, "fsck ") && took < 900*time.Millisecond {
		t.Errorf("a quick fsck (%v) shows progress:\n%s", took, quick.Stderr)
	}
	sl.on.Store(true)
	defer sl.on.Store(false) // the cleanup lists the bucket too
	for _, args := range [][]string{{"fsck", v.MetaURL}, {"gc", "--dry-run", v.MetaURL}} {
		res := testutil.MustRun(t, args...)
		if !strings.Contains(res.Stderr, args[0]+"  listing objects") || strings.Contains(res.Stderr, "\x1b") {
			t.Errorf("shoal %s (1.2s listing, stderr not a terminal): want a plain line for the listing phase, got:\n%q", strings.Join(args, " "), res.Stderr)
		}
	}
	// On a terminal (script(1) gives the command one): a live line.
	cmd := exec.Command("script", "-qec", testutil.Binary(t)+" fsck "+v.MetaURL, "/dev/null")
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fsck on a terminal: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "\r\x1b[Kfsck  listing objects") {
		t.Errorf("fsck on a terminal shows no live progress line:\n%q", out)
	}
}
