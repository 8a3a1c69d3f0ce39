package tls

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"shoal/internal/testutil"
)

// TestPostgresTLS: sslmode=verify-full with the test CA formats and mounts
// a volume; the wrong CA, a host name the certificate does not list, and
// plain text are refused, the first two with what to fix.
func TestPostgresTLS(t *testing.T) {
	testutil.PGURL(t) // the service skip rules
	s := startPostgresTLS(t)
	p := s.pki
	pgURL := func(host, ca, mode string) string {
		return fmt.Sprintf("postgres://postgres@%s:%d/postgres?sslmode=%s&sslrootcert=%s", host, s.port, mode, url.QueryEscape(ca))
	}
	format := func(metaURL string) []string {
		return []string{"format", metaURL, "--name", "t", "--storage", "file", "--bucket", filepath.Join(s.dir, "bucket")}
	}

	v := testutil.NewVolumeWith(t, testutil.VolumeConfig{MetaURL: pgURL("127.0.0.1", p.ca.File, "verify-full")})
	roundTrip(t, v)

	mustFail(t, format(pgURL("127.0.0.1", p.other.File, "verify-full")),
		"is not signed by a trusted CA", "sslrootcert=FILE")
	mustFail(t, format(pgURL("127.0.0.2", p.ca.File, "verify-full")),
		`is for localhost, 127.0.0.1, not "127.0.0.2"`)
	// The server takes only TLS (hostssl), so the volume above used it.
	mustFail(t, format(pgURL("127.0.0.1", p.ca.File, "disable")), "no encryption")
}

// pgServer is a dedicated PostgreSQL serving TLS only.
type pgServer struct {
	*server
	pki pki
}

// startPostgresTLS runs a fresh cluster on 127.0.0.1 and 127.0.0.2 that
// accepts only TLS connections, with a certificate for 127.0.0.1 and
// localhost.
func startPostgresTLS(t *testing.T) *pgServer {
	t.Helper()
	s := &pgServer{server: newServer(t, "postgres")}
	s.pki = newPKI(t, s.dir)
	pw, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("PostgreSQL needs the postgres user: %v", err)
	}
	uid, _ := strconv.Atoi(pw.Uid)
	gid, _ := strconv.Atoi(pw.Gid)
	s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	// The server refuses a key others can read or it does not own.
	if err := os.Chown(s.pki.serverKey, uid, gid); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(s.dir, "data")
	if err := os.Chown(s.dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	initdb := exec.Command(filepath.Join(pgBinDir(t), "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(data, "pg_hba.conf"), []byte("hostssl all all 127.0.0.0/8 trust\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.argv = []string{filepath.Join(pgBinDir(t), "postgres"), "-D", data, "-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1,127.0.0.2", "-c", "unix_socket_directories=", "-c", "fsync=off",
		"-c", "shared_buffers=16MB", "-c", "ssl=on",
		"-c", "ssl_cert_file=" + s.pki.serverCert, "-c", "ssl_key_file=" + s.pki.serverKey}
	ready := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=verify-full&sslrootcert=%s", s.port, url.QueryEscape(s.pki.ca.File))
	s.start(t, func() error { return pingSQL(ready) })
	return s
}

func pingSQL(url string) error {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

// pgBinDir finds the PostgreSQL server binaries Debian installs.
func pgBinDir(t *testing.T) string {
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
