package secrets

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"shoal/internal/testutil"
	"shoal/tests/isolate"
)

// pgRole creates a PostgreSQL role with a long random password and a
// schema it owns on the server base names, both dropped when the test
// ends, and returns the role's META-URL without the password, and the
// password.
func pgRole(t *testing.T, base string) (metaURL, password string) {
	t.Helper()
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	role, schema := isolate.Name("role"), isolate.Name("pg")
	password = "PgS3cret" + randomHex(16)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, q := range []string{
		fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", role, password),
		fmt.Sprintf("CREATE SCHEMA %s AUTHORIZATION %s", schema, role),
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			db.Close()
			t.Fatalf("postgres: %v", err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, q := range []string{"DROP SCHEMA " + schema + " CASCADE", "DROP ROLE " + role} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Logf("postgres cleanup: %v", err)
			}
		}
		db.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	u.Path = "/postgres"
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), password
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// withPassword puts password into the user info of raw.
func withPassword(t *testing.T, raw, password string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), password)
	return u.String()
}

// evidence is everything the test saw, to be searched for secrets.
type evidence struct {
	items []item
}

type item struct{ where, text string }

func (e *evidence) add(where, text string) { e.items = append(e.items, item{where, text}) }

// addFile adds the content of a file (missing: nothing).
func (e *evidence) addFile(t *testing.T, where, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Errorf("reading %s: %v", path, err)
	}
	e.add(where, string(b))
}

// addDump adds a dump file, and every key and value in it decoded.
func (e *evidence) addDump(t *testing.T, where, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("dump %s: %v", path, err)
		return
	}
	e.add(where, string(b))
	for _, line := range strings.Split(string(b), "\n") {
		var rec struct{ K, V string }
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		k, _ := base64.StdEncoding.DecodeString(rec.K)
		v, _ := base64.StdEncoding.DecodeString(rec.V)
		e.add(where+" (decoded)", string(k)+" "+string(v))
	}
}

// check fails t for every place any secret shows in.
func (e *evidence) check(t *testing.T, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		forms := []string{s, url.QueryEscape(s), base64.StdEncoding.EncodeToString([]byte(s))}
		for _, it := range e.items {
			for _, f := range forms {
				if strings.Contains(it.text, f) {
					t.Errorf("secret %.6s... found in %s:\n%s", s, it.where, excerpt(it.text, f))
					break
				}
			}
		}
	}
	if len(e.items) < 20 {
		t.Errorf("only %d places searched: the test lost its evidence", len(e.items))
	}
}

// excerpt shows the line of text holding s.
func excerpt(text, s string) string {
	i := strings.Index(text, s)
	start := strings.LastIndexByte(text[:i], '\n') + 1
	end := strings.IndexByte(text[i:], '\n')
	if end < 0 {
		end = len(text) - i
	}
	return "  " + text[start:i+end]
}

// shoal runs the binary with extra environment variables and records its
// output as evidence.
func (e *evidence) shoal(t *testing.T, env []string, args ...string) testutil.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testutil.Binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	res := testutil.Result{Code: cmd.ProcessState.ExitCode(), Stdout: stdout.String(), Stderr: stderr.String()}
	label := "shoal " + strings.Join(args, " ")
	e.add(label+" (stdout)", res.Stdout)
	e.add(label+" (stderr)", res.Stderr)
	return res
}

// must is shoal that fails t unless the command succeeds.
func (e *evidence) must(t *testing.T, env []string, args ...string) testutil.Result {
	t.Helper()
	res := e.shoal(t, env, args...)
	if res.Code != 0 {
		t.Fatalf("shoal %s: exit %d\n%s%s", strings.Join(args, " "), res.Code, res.Stdout, res.Stderr)
	}
	return res
}

// addProc adds what other users see of process pid: its command line,
// as the kernel and ps show it.
func (e *evidence) addProc(t *testing.T, where string, pid int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	e.add(where+" /proc/PID/cmdline", strings.ReplaceAll(string(b), "\x00", " "))
	out, _ := exec.Command("ps", "-ww", "-o", "args=", "-p", fmt.Sprint(pid)).Output()
	e.add(where+" ps", string(out))
}
