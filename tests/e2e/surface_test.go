package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"shoal/internal/testutil"
	"shoal/tests/isolate"
)

// internalName matches what users must not see in messages: internal
// package prefixes and the log lines of libraries.
var internalName = regexp.MustCompile(`\b(?:sqlkv|rediskv|memkv|kvmeta|kvopen|kv|filestore|s3store|memstore|objopen|keyring|identity|vfs|fusefs|volume|metrics|journal|takeover|opstat): |(?m)^\w+: \d{4}/\d\d/\d\d |level=`)

// TestCLIExitCodes runs every command with a usage error (exit 2) and,
// where it reads a volume, with a volume that is not there (exit 4), as
// docs/cli.md states; none of them creates the missing database.
func TestCLIExitCodes(t *testing.T) {
	testutil.RequireFUSE(t) // mount checks /dev/fuse before the volume
	dir := t.TempDir()
	db := filepath.Join(dir, "none.db")
	missing := "sqlite://" + db
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("a passphrase of some length\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	usage := [][]string{
		{"no-such-command"}, {"up", "--no-such-flag"}, {"up", "a", "b"}, {"format"},
		{"format", missing, "--block-size", "huge"}, {"mount", missing}, {"umount"},
		{"status"}, {"fsck"}, {"fsck", missing, "--progress", "sometimes"}, {"gc"},
		{"gc", missing, "--grace", "-1h"}, {"dump", missing}, {"load", missing},
		{"claims"}, {"quota"}, {"quota", "no-such"}, {"quota", "list"}, {"key"},
		{"key", "rotate"}, {"trash"}, {"trash", "no-such"}, {"trash", "list"}, {"trash", "days", missing, "x"},
		{"trash", "restore", missing}, {"trash", "restore", missing, "--all", "--hour", "yesterday"},
		{"trash", "empty", missing, "--older-than", "soon"}, {"bench", "--no-such-flag"}, {"bench", "--progress=sometimes", dir},
		{"install", "extra"}, {"completion"}, {"completion", "no-such-shell"},
		{"status", "nosuch://x"}, {"fsck", "no-scheme"}, {"mount", "nosuch://x", dir},
		{"console"}, {"console", "a", "b"}, {"stats"},
	}
	notFound := [][]string{
		{"mount", missing, dir}, {"mount", "--background", missing, dir}, {"umount", dir},
		{"status", missing}, {"status", "--json", missing}, {"fsck", missing}, {"gc", missing},
		{"dump", missing, filepath.Join(dir, "dump")}, {"claims", missing},
		{"quota", "list", missing}, {"quota", "get", missing, "--path", "/a"},
		{"quota", "set", missing, "--path", "/a", "--inodes", "5"}, {"quota", "delete", missing, "--path", "/a"},
		{"key", "rotate", missing, "--passphrase-file", pw, "--new-passphrase-file", pw},
		{"trash", "list", missing}, {"trash", "days", missing, "1"}, {"trash", "restore", missing, "--all"},
		{"trash", "empty", missing},
		{"snapshot", "list", missing}, {"snapshot", "create", missing, "s"}, {"snapshot", "delete", missing, "s"},
		{"bench", "mass", filepath.Join(dir, "no-such-dir")}, {"console", missing},
		{"console", "--listen", "127.0.0.1:0", missing},
	}
	check := func(args []string, want int) {
		res := testutil.Run(t, args...)
		cmd := "shoal " + strings.Join(args, " ")
		if res.Code != want {
			t.Errorf("%s: exit %d, want %d\n%s", cmd, res.Code, want, res.Stderr)
		}
		if m := internalName.FindString(res.Stderr); m != "" {
			t.Errorf("%s: message shows %q:\n%s", cmd, m, res.Stderr)
		}
		if _, err := os.Stat(db); err == nil {
			t.Fatalf("%s created the database %s", cmd, db)
		}
	}
	for _, args := range usage {
		check(args, 2)
	}
	for _, args := range notFound {
		check(args, 4)
	}
}

// TestCLIHelpDefaults reads every command's --help: defaults are written
// as people write them (256M, 1m), never as raw bytes or Go durations.
func TestCLIHelpDefaults(t *testing.T) {
	bad := regexp.MustCompile(`\(default (?:-\d|\d+m0s|\d+h0m)|\(default \)`)
	rawBytes := regexp.MustCompile(`--\S+ size .*\(default \d{4,}\)`)
	seen := 0
	var walk func(path []string)
	walk = func(path []string) {
		res := testutil.MustRun(t, append(path, "--help")...)
		seen++
		for _, line := range strings.Split(res.Stdout, "\n") {
			if m := bad.FindString(line) + rawBytes.FindString(line); m != "" {
				t.Errorf("shoal %s --help: %q in\n%s", strings.Join(path, " "), m, line)
			}
		}
		_, cmds, ok := strings.Cut(res.Stdout, "Available Commands:\n")
		if !ok {
			return
		}
		cmds, _, _ = strings.Cut(cmds, "\n\n")
		for _, line := range strings.Split(cmds, "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] != "help" {
				walk(append(append([]string{}, path...), f[0]))
			}
		}
	}
	walk(nil)
	if seen < 20 {
		t.Fatalf("walked only %d commands' --help", seen)
	}
}

// snakeKey is the form of every JSON key Shoal prints.
var snakeKey = regexp.MustCompile(`^[a-z0-9]+(_[a-z0-9]+)*$`)

// jsonKeys returns every key path of a JSON document that is not
// snake_case.
func badJSONKeys(t *testing.T, what, doc string) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("%s: not JSON: %v\n%s", what, err, doc)
	}
	var bad []string
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if !snakeKey.MatchString(k) {
					bad = append(bad, path+"."+k)
				}
				walk(e, path+"."+k)
			}
		case []any:
			for _, e := range v {
				walk(e, path+"[]")
			}
		}
	}
	walk(v, what)
	return bad
}

// TestCLIJSONSnakeCase walks the keys of every --json output (with a
// mount live, so that status lists a session), and checks that bench
// --html says where it wrote the report.
func TestCLIJSONSnakeCase(t *testing.T) {
	v := testutil.NewVolumeWith(t, testutil.VolumeConfig{ExtraFormatArgs: []string{"--capacity", "1G", "--compress", "zstd"}})
	m := v.Mount(t, "--metrics", "127.0.0.1:0", "--console", "127.0.0.1:0")
	if err := os.WriteFile(m.Path("f"), []byte("some data"), 0o644); err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{
		"status":              testutil.MustRun(t, "status", "--json", v.MetaURL).Stdout,
		"stats --once":        testutil.MustRun(t, "stats", "--once", "--json", m.Dir).Stdout,
		"console /api/status": getConsoleStatus(t, m),
	}
	m.Unmount(t)
	outputs["fsck"] = testutil.MustRun(t, "fsck", "--json", v.MetaURL).Stdout
	outputs["gc"] = testutil.MustRun(t, "gc", "--json", "--dry-run", v.MetaURL).Stdout
	dir := filepath.Join(v.Dir, "bench")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(v.Dir, "report.html")
	res := testutil.MustRun(t, "bench", "mass", "--mass-files", "20", "--rounds", "1", "--json", "--html", html, "local="+dir)
	outputs["bench"] = res.Stdout
	if !strings.Contains(res.Stderr, "HTML report written to "+html) {
		t.Errorf("bench --html does not say where it wrote the report:\n%s", res.Stderr)
	}
	if _, err := os.Stat(html); err != nil {
		t.Errorf("bench --html: %v", err)
	}
	if !strings.Contains(outputs["status"], `"sessions": [`+"\n") {
		t.Errorf("status --json lists no session of the live mount:\n%s", outputs["status"])
	}
	for what, doc := range outputs {
		if bad := badJSONKeys(t, what, doc); len(bad) > 0 {
			t.Errorf("%s --json: keys not in snake_case: %v", what, bad)
		}
	}
}

// TestCLIFailureMessages checks the messages of typical failures: one
// line that says what is wrong, with no internal package names or
// library log lines.
func TestCLIFailureMessages(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		what string
		args []string
		want string
	}{
		{"unknown scheme", []string{"status", "nosuch://x"}, "unknown META-URL scheme"},
		{"missing volume", []string{"status", "sqlite://" + filepath.Join(dir, "none.db")}, "no volume at"},
		{"unformatted database", []string{"fsck", isolate.RedisNamespaceURL(t, testutil.RedisURL(t))}, "no volume at"},
		{"stopped PostgreSQL", []string{"status", "postgres://shoal@127.0.0.1:1/shoal?sslmode=disable"}, "cannot connect to PostgreSQL"},
		{"stopped Redis", []string{"status", "redis://127.0.0.1:1/0"}, "cannot connect to Redis"},
		{"stopped S3", []string{"format", "sqlite://" + filepath.Join(dir, "s3.db"), "--storage", "s3", "--bucket", "http://127.0.0.1:1/bucket"}, "cannot reach S3 endpoint"},
		{"missing directory", []string{"status", "sqlite:///no/such/dir/meta.db"}, "no volume at"},
	}
	for _, c := range cases {
		res := testutil.Run(t, c.args...)
		msg := strings.TrimSpace(res.Stderr)
		if res.Code == 0 || !strings.Contains(msg, c.want) {
			t.Errorf("%s: exit %d, message %q; want it to say %q", c.what, res.Code, msg, c.want)
		}
		if m := internalName.FindString(msg); m != "" {
			t.Errorf("%s: message shows %q: %s", c.what, m, msg)
		}
		if strings.Count(msg, "\n") > 0 || !strings.HasPrefix(msg, "shoal: ") {
			t.Errorf("%s: want one line starting 'shoal: ', got:\n%s", c.what, msg)
		}
	}
}

// consoleAddr is where a mount's log says its console listens.
var consoleAddr = regexp.MustCompile(`web console listening" addr=(http://[0-9.:]+/)`)

// getConsoleStatus returns the body of m's console's /api/status.
func getConsoleStatus(t *testing.T, m *testutil.Mount) string {
	t.Helper()
	found := consoleAddr.FindStringSubmatch(m.LogText())
	if found == nil {
		t.Fatalf("the mount does not log its console's address:\n%s", m.LogText())
	}
	resp, err := http.Get(found[1] + "api/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %sapi/status: %v %s", found[1], err, resp.Status)
	}
	return string(body)
}
