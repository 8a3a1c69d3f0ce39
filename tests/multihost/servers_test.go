package multihost

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"shoal/internal/object/s3store"
	"shoal/internal/testutil"
)

// A dedicated server is a PostgreSQL, Redis or MinIO process started by one
// test, listening on an address the test picks (loopback, or the root side
// of the test's namespace bridge), so that the test can stop and restart it
// or cut a link to it without touching the shared servers. It keeps its
// data in a scratch directory across restarts and is killed when the test
// ends (and, as a last resort, when the test process exits: Pdeathsig).

// server is one dedicated server process.
type server struct {
	name  string
	host  string
	port  int
	dir   string
	argv  []string // command line
	env   []string // extra environment
	cred  *syscall.Credential
	ready func() error // answers once the server serves

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// running tracks live dedicated servers for stopDedicatedServers.
var running struct {
	sync.Mutex
	servers map[*server]bool
}

// stopDedicatedServers kills any server a test left running (TestMain).
func stopDedicatedServers() {
	running.Lock()
	defer running.Unlock()
	for s := range running.servers {
		s.kill(syscall.SIGKILL)
	}
}

// Credentials of every MinIO the tests run; the shared one (scripts/minio.sh)
// uses the same, so AWS_* in the environment fit both.
const (
	minioUser   = "shoaltest"
	minioSecret = "shoaltest-secret-key"
	minioBucket = "shoal-mh"
)

// requireServers applies the service skip rules: the dedicated servers use
// the binaries the test command installed for the shared ones.
func requireServers(t *testing.T) {
	t.Helper()
	testutil.PGURL(t)
	testutil.RedisURL(t)
	testutil.S3URL(t)
}

// addr is host:port.
func (s *server) addr() string { return net.JoinHostPort(s.host, strconv.Itoa(s.port)) }

// start launches the process and waits up to a minute for it to serve.
func (s *server) start(t *testing.T) {
	t.Helper()
	logf, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Env = append(os.Environ(), s.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: s.cred}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", s.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	running.Lock()
	if running.servers == nil {
		running.servers = map[*server]bool{}
	}
	running.servers[s] = true
	running.Unlock()
	if err := s.waitReady(done); err != nil {
		s.kill(syscall.SIGKILL)
		b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
		t.Fatalf("%s on %s: %v\nlog:\n%s", s.name, s.addr(), err, tail(string(b), 4000))
	}
}

func (s *server) waitReady(done chan struct{}) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := s.ready()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("exited during start-up: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after a minute: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill sends sig and waits up to 30 s for the process to exit (then
// SIGKILL).
func (s *server) kill(sig syscall.Signal) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	running.Lock()
	delete(running.servers, s)
	running.Unlock()
}

// restart stops the server with sig, leaves it down for downtime, and
// starts it again on the same address with the same data.
func (s *server) restart(t *testing.T, sig syscall.Signal, downtime time.Duration) {
	t.Helper()
	start := time.Now()
	s.kill(sig)
	time.Sleep(downtime)
	s.start(t)
	t.Logf("%s restarted (%v, down %v)", s.name, sig, time.Since(start).Round(time.Millisecond))
}

// newServer prepares a server's data directory.
func newServer(t *testing.T, name, host string) *server {
	t.Helper()
	base, err := testutil.ScratchDir()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(base, name+"-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &server{name: name, host: host, port: freePort(t, host), dir: dir}
	t.Cleanup(func() {
		s.kill(syscall.SIGKILL)
		_ = os.RemoveAll(dir)
	})
	return s
}

// freePort asks the kernel for a free TCP port on host.
func freePort(t *testing.T, host string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("finding a free port on %s: %v", host, err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startPostgres runs a fresh PostgreSQL cluster on host. Clients from the
// test's namespaces (10.213.0.0/16) and loopback connect without password.
func startPostgres(t *testing.T, host string) *server {
	t.Helper()
	bin := pgBinDir(t)
	s := newServer(t, "postgres", host)
	pw, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("PostgreSQL needs the postgres user: %v", err)
	}
	uid, _ := strconv.Atoi(pw.Uid)
	gid, _ := strconv.Atoi(pw.Gid)
	s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	data := filepath.Join(s.dir, "data")
	if err := os.Chown(s.dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	hba, err := os.OpenFile(filepath.Join(data, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(hba, "host all all 10.213.0.0/16 trust")
	hba.Close()
	s.argv = []string{filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=" + host, "-c", "unix_socket_directories=", "-c", "fsync=off",
		"-c", "max_connections=200", "-c", "shared_buffers=32MB"}
	s.ready = func() error { return pingSQL(s.url()) }
	s.start(t)
	return s
}

// url is the server's META-URL base (PostgreSQL or Redis).
func (s *server) url() string {
	switch s.name {
	case "postgres":
		return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", s.addr())
	case "redis":
		return fmt.Sprintf("redis://%s/0", s.addr())
	}
	return fmt.Sprintf("http://%s/%s", s.addr(), minioBucket)
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

// startRedis runs a Redis server on host with an append-only file, so a
// restart keeps what it acknowledged.
func startRedis(t *testing.T, host string) *server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("no redis-server (scripts/services.sh installs it)")
	}
	s := newServer(t, "redis", host)
	s.argv = []string{bin, "--port", strconv.Itoa(s.port), "--bind", host, "--protected-mode", "no",
		"--save", "", "--appendonly", "yes", "--appendfsync", "everysec", "--dir", s.dir}
	s.ready = func() error {
		c := redis.NewClient(&redis.Options{Addr: s.addr(), DialTimeout: time.Second, MaxRetries: -1})
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return c.Ping(ctx).Err()
	}
	s.start(t)
	return s
}

// minioBinary is where scripts/minio.sh builds MinIO (SHOAL_MINIO_BIN
// overrides).
func minioBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("SHOAL_MINIO_BIN")
	if bin == "" {
		cache := os.Getenv("SHOAL_CACHE")
		if cache == "" {
			cache = "/var/cache/shoal"
		}
		bin = filepath.Join(cache, "bin", "minio")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no MinIO binary at %s (scripts/minio.sh start builds it; SHOAL_MINIO_BIN overrides): %v", bin, err)
	}
	return bin
}

// startMinIO runs a MinIO server on host and creates the test bucket.
func startMinIO(t *testing.T, host string) *server {
	t.Helper()
	s := newServer(t, "minio", host)
	s.argv = []string{minioBinary(t), "server", "--quiet", "--address", s.addr(), filepath.Join(s.dir, "data")}
	s.env = []string{"MINIO_ROOT_USER=" + minioUser, "MINIO_ROOT_PASSWORD=" + minioSecret,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off"}
	client := &http.Client{Timeout: 2 * time.Second}
	s.ready = func() error {
		resp, err := client.Get("http://" + s.addr() + "/minio/health/ready")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("health: HTTP %d", resp.StatusCode)
		}
		return nil
	}
	s.start(t)
	makeBucket(t, s.url())
	return s
}

// makeBucket creates the bucket of a bucket URL with the MinIO credentials.
func makeBucket(t *testing.T, bucketURL string) {
	t.Helper()
	cfg, err := s3store.ParseURL(bucketURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.AccessKey, cfg.SecretKey, cfg.CreateBucket = minioUser, minioSecret, true
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A MinIO that answers its health check may still refuse requests for
	// a moment ("Server not initialized yet, please try again").
	for {
		st, err := s3store.New(ctx, cfg)
		if err == nil {
			err = st.Check(ctx)
		}
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("creating bucket %s: %v", bucketURL, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
