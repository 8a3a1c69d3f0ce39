package secrets

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// passwordPostgres starts a PostgreSQL server of the test's own that
// checks passwords (scram-sha-256; the shared test server trusts every
// loopback client, so it cannot tell whether a password reached it), and
// returns a superuser URL for it. The server is killed when the test ends.
func passwordPostgres(t *testing.T) string {
	t.Helper()
	bin := pgBin(t)
	pu, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("PostgreSQL needs the postgres user: %v", err)
	}
	uid, _ := strconv.Atoi(pu.Uid)
	gid, _ := strconv.Atoi(pu.Gid)
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	base, err := testutil.ScratchDir()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(base, "pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	superPW := "super" + randomHex(8)
	if err := os.WriteFile(filepath.Join(dir, "pw"), []byte(superPW+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := chownAll(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=scram-sha-256",
		"--pwfile="+filepath.Join(dir, "pw"), "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	port := freePort(t)
	srv := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", "fsync=off", "-c", "shared_buffers=16MB")
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	url := fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/postgres?sslmode=disable", superPW, port)
	waitSQL(t, url)
	return url
}

func chownAll(dir string, uid, gid int) error {
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(p, uid, gid)
	})
}

func pgBin(t *testing.T) string {
	t.Helper()
	for _, v := range []string{"15", "16", "17", "14"} {
		dir := "/usr/lib/postgresql/" + v + "/bin"
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir
		}
	}
	t.Fatal("no PostgreSQL server binaries under /usr/lib/postgresql (scripts/services.sh installs them)")
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func waitSQL(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		db, err := sql.Open("pgx", url)
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err = db.PingContext(ctx)
			cancel()
			db.Close()
		}
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("PostgreSQL not ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
