package tls

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"shoal/internal/testutil"
	"shoal/internal/tlsconf/tlstest"
)

// server is a dedicated server process owned by one test: started on a
// free loopback port, killed by t.Cleanup (and by the kernel if the test
// process dies: Pdeathsig).
type server struct {
	name string
	dir  string // scratch directory, readable by the server's user
	port int
	argv []string
	env  []string
	cred *syscall.Credential
}

// newServer makes the scratch directory and picks the port.
func newServer(t *testing.T, name string) *server {
	t.Helper()
	base, err := testutil.ScratchDir()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(base, "tls-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return &server{name: name, dir: dir, port: freePort(t)}
}

// addr is 127.0.0.1:port.
func (s *server) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// start runs the server and waits up to 30 s for ready to succeed.
func (s *server) start(t *testing.T, ready func() error) {
	t.Helper()
	logPath := filepath.Join(s.dir, "server.log")
	logf, err := os.Create(logPath)
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
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := ready()
		if err == nil {
			return
		}
		select {
		case <-done:
			err = fmt.Errorf("exited during start-up: %v", err)
		default:
			if time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
				continue
			}
		}
		b, _ := os.ReadFile(logPath)
		t.Fatalf("%s on %s not ready: %v\nlog:\n%s", s.name, s.addr(), err, b)
	}
}

// freePort asks the kernel for a free TCP port on 127.0.0.1.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// pki is a test's CA, a server certificate from it for 127.0.0.1 and
// localhost, and a second CA that signed nothing the server shows.
type pki struct {
	ca, other             *tlstest.CA
	serverCert, serverKey string
}

func newPKI(t *testing.T, dir string) pki {
	t.Helper()
	p := pki{ca: tlstest.NewCA(t, dir, "ca"), other: tlstest.NewCA(t, dir, "other-ca")}
	p.serverCert, p.serverKey = p.ca.Issue(t, dir, "server", "127.0.0.1", "localhost")
	return p
}

// roundTrip writes a file through a fresh mount of v and reads it back
// through a second mount, so the data went through the servers.
func roundTrip(t *testing.T, v *testutil.Volume) {
	t.Helper()
	want := []byte("over TLS\n")
	m := v.Mount(t)
	if err := os.WriteFile(m.Path("f"), want, 0o644); err != nil {
		t.Fatal(err)
	}
	m.Unmount(t)
	m = v.Mount(t)
	got, err := os.ReadFile(m.Path("f"))
	if err != nil || string(got) != string(want) {
		t.Fatalf("read back %q, %v; want %q", got, err, want)
	}
	m.Unmount(t)
}

// mustFail runs shoal args and checks that it fails with stderr holding
// every one of wants.
func mustFail(t *testing.T, args []string, wants ...string) {
	t.Helper()
	res := testutil.RunTimeout(t, time.Minute, args...)
	if res.Code == 0 {
		t.Fatalf("shoal %v succeeded, want a failure", args)
	}
	t.Logf("shoal %s %s: %s", args[0], args[1], strings.TrimSpace(res.Stderr))
	for _, w := range wants {
		if !strings.Contains(res.Stderr, w) {
			t.Errorf("shoal %v: stderr does not say %q:\n%s", args, w, res.Stderr)
		}
	}
}
