package console

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// chromium returns the headless browser the pages are loaded in, found
// on PATH as the bench lab finds it (Debian's chromium, Ubuntu's
// chromium-browser). Without one the test fails: the console is only
// proven by rendering it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("headless Chromium is needed: neither chromium nor chromium-browser is on PATH (apt-get install chromium)")
	return ""
}

// dumpDOM loads url in headless Chromium and returns the DOM it built.
func dumpDOM(t *testing.T, url string) string {
	t.Helper()
	chromium := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu",
		"--user-data-dir="+t.TempDir(), "--dump-dom", url)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v", url, err)
	}
	return string(out)
}

// page is what a test reads from the console's rendered DOM.
type page struct {
	usedSpace, usedInodes, mountCount uint64
	sessions                          []uint64 // data-session of the mount rows
	ops                               []uint64 // data-ops of the mount rows that have a report
	mountpoints                       []string
	jobs                              []string                 // data-job of the maintenance rows
	slow                              map[string]time.Duration // slowest shown per operation
	dom                               string
}

var (
	valueRe      = regexp.MustCompile(`id="([a-z-]+)" data-value="(\d+)"`)
	mountRowRe   = regexp.MustCompile(`class="mount" data-session="(\d+)" data-host="[^"]*" data-mountpoint="([^"]*)"`)
	slowRe       = regexp.MustCompile(`class="slow" data-op="([a-z_]+)" data-ns="(\d+)"`)
	opsRe        = regexp.MustCompile(`class="num ops" data-ops="(\d+)"`)
	runRowRe     = regexp.MustCompile(`class="run" data-job="([a-z]+)"`)
	consoleURLRe = regexp.MustCompile(`at (http://[0-9.:]+/)`)
)

// parsePage reads the figures of a dumped DOM.
func parsePage(t *testing.T, dom string) page {
	t.Helper()
	p := page{dom: dom}
	values := map[string]uint64{}
	for _, m := range valueRe.FindAllStringSubmatch(dom, -1) {
		values[m[1]], _ = strconv.ParseUint(m[2], 10, 64)
	}
	for _, id := range []string{"used-space", "used-inodes", "mount-count"} {
		if _, found := values[id]; !found {
			t.Fatalf("the console page has no %s figure:\n%s", id, dom)
		}
	}
	p.usedSpace, p.usedInodes, p.mountCount = values["used-space"], values["used-inodes"], values["mount-count"]
	for _, m := range mountRowRe.FindAllStringSubmatch(dom, -1) {
		id, _ := strconv.ParseUint(m[1], 10, 64)
		p.sessions = append(p.sessions, id)
		p.mountpoints = append(p.mountpoints, m[2])
	}
	for _, m := range opsRe.FindAllStringSubmatch(dom, -1) {
		n, _ := strconv.ParseUint(m[1], 10, 64)
		p.ops = append(p.ops, n)
	}
	p.slow = map[string]time.Duration{}
	for _, m := range slowRe.FindAllStringSubmatch(dom, -1) {
		ns, _ := strconv.ParseInt(m[2], 10, 64)
		p.slow[m[1]] = max(p.slow[m[1]], time.Duration(ns))
	}
	for _, m := range runRowRe.FindAllStringSubmatch(dom, -1) {
		p.jobs = append(p.jobs, m[1])
	}
	return p
}

// statusFigures runs `shoal status --json` and returns what the page
// must match: used space, used inodes and the session ids.
func statusFigures(t *testing.T, metaURL string) (space, inodes uint64, sessions []uint64) {
	t.Helper()
	var doc map[string]any
	out := testutil.MustRun(t, "status", "--json", metaURL).Stdout
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	usage, _ := field(t, doc, "usage").(map[string]any)
	space, inodes = number(field(t, usage, "used_space")), number(field(t, usage, "used_inodes"))
	list, _ := field(t, doc, "sessions").([]any)
	for _, s := range list {
		obj, _ := s.(map[string]any)
		sessions = append(sessions, number(field(t, obj, "id")))
	}
	return space, inodes, sessions
}

// field is obj's value at key, exactly as status --json spells it
// (snake_case, docs/cli.md); a missing key fails the test.
func field(t *testing.T, obj map[string]any, key string) any {
	t.Helper()
	v, ok := obj[key]
	if !ok {
		t.Fatalf("status --json has no key %q in %v", key, obj)
	}
	return v
}

func number(v any) uint64 {
	f, _ := v.(float64)
	return uint64(f)
}

// startConsole runs `shoal console META-URL --listen 127.0.0.1:0 args...`
// until the test ends and returns its base URL.
func startConsole(t *testing.T, metaURL string, args ...string) string {
	t.Helper()
	cmd := exec.Command(testutil.Binary(t), append([]string{"console", metaURL, "--listen", "127.0.0.1:0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	m := consoleURLRe.FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("shoal console did not say where it listens: %q, %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return m[1]
}

// post sends a POST to url with an optional bearer token and returns the
// status code and body.
func post(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// waitPage loads the page in Chromium until cond holds or limit passes,
// and returns the last page read.
func waitPage(t *testing.T, url string, limit time.Duration, cond func(page) bool) (page, bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		p := parsePage(t, dumpDOM(t, url))
		if cond(p) || time.Now().After(deadline) {
			return p, cond(p)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// get fetches url and returns its body.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}
