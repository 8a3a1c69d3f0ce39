package service

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// unitFile is the systemd template unit the repository ships.
const unitFile = "contrib/systemd/shoal@.service"

// installedBin is where the unit expects the binary: 'shoal install's
// default prefix.
const installedBin = "/usr/local/bin/shoal"

// unit is a parsed unit file: section → key → values, in order.
type unit map[string]map[string][]string

func readUnit(t *testing.T) (unit, string) {
	t.Helper()
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, unitFile)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u, section := unit{}, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[' && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s: not a unit file line: %q", unitFile, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	return u, path
}

func (u unit) one(t *testing.T, section, key string) string {
	t.Helper()
	vs := u[section][key]
	if len(vs) != 1 {
		t.Fatalf("%s: [%s] %s= set %d times, want once", unitFile, section, key, len(vs))
	}
	return vs[0]
}

// TestSystemdUnit checks the unit's promises: started after the network
// is up, restarted on failure, ready when the mount serves (Type=notify),
// logging to the journal; and has systemd-analyze verify it.
func TestSystemdUnit(t *testing.T) {
	u, path := readUnit(t)
	for _, key := range []string{"After", "Wants"} {
		if v := u.one(t, "Unit", key); !strings.Contains(v, "network-online.target") {
			t.Errorf("[Unit] %s=%s: want network-online.target", key, v)
		}
	}
	want := map[string]string{"Type": "notify", "Restart": "on-failure", "StandardError": "journal", "EnvironmentFile": "/etc/shoal/%i.env",
		// SIGTERM goes to the supervisor alone, which has its server
		// flush and unmount (control-group would signal the server too).
		"KillMode": "mixed",
		// Reload waits for the upgrade to finish and reports its failure.
		"ExecReload": installedBin + " mount --upgrade %f"}
	for k, v := range want {
		if got := u.one(t, "Service", k); got != v {
			t.Errorf("[Service] %s=%s, want %s", k, got, v)
		}
	}
	exec := strings.Fields(u.one(t, "Service", "ExecStart"))
	if len(exec) < 4 || exec[0] != installedBin || exec[1] != "mount" || exec[3] != "%f" {
		t.Errorf("ExecStart=%v: want %s mount $SHOAL_META_URL %%f ...", exec, installedBin)
	}
	for _, a := range exec {
		if a == "--background" || a == "-d" {
			t.Errorf("ExecStart=%v: a service mount runs in the foreground", exec)
		}
	}
	if v := u.one(t, "Install", "WantedBy"); v == "" {
		t.Error("[Install] WantedBy is empty: 'systemctl enable' would do nothing")
	}
	if res := testutil.MustRun(t, "install", "--help"); !strings.Contains(res.Stdout, `"/usr/local"`) {
		t.Errorf("'shoal install' no longer defaults to /usr/local, where the unit runs the binary from:\n%s", res.Stdout)
	}
	verifyUnit(t, path)
}

// verifyUnit runs systemd-analyze verify on an instance of the unit whose
// binary is the one under test (verify checks that it is executable).
func verifyUnit(t *testing.T, path string) {
	t.Helper()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv(testutil.EnvRequireFUSE) == "1" || os.Getenv(testutil.EnvRequireServices) == "1" {
			t.Fatalf("systemd-analyze is not installed (Debian package systemd, in scripts/test.sh's PACKAGES) but %s/%s ask for the full suite", testutil.EnvRequireFUSE, testutil.EnvRequireServices)
		}
		t.Log("systemd-analyze is not installed: the unit's content was checked, not its syntax")
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	inst := filepath.Join(t.TempDir(), "shoal@mnt-test.service")
	text := strings.ReplaceAll(string(b), installedBin, testutil.Binary(t))
	if err := os.WriteFile(inst, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", "--man=no", inst).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify %s: %v\n%s", unitFile, err, out)
	}
}

// TestSystemdNotify runs the unit's ExecStart as systemd would (its
// variables from an environment file, NOTIFY_SOCKET set) and checks that
// READY=1 arrives once the mount serves, and that SIGTERM (systemctl
// stop) unmounts and ends the process cleanly.
func TestSystemdNotify(t *testing.T) {
	testutil.RequireFUSE(t)
	u, _ := readUnit(t)
	v := testutil.NewVolume(t)
	sock := filepath.Join(v.Dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	vars := map[string]string{"$SHOAL_META_URL": v.MetaURL, "%f": v.Mountpoint, "$SHOAL_MOUNT_OPTIONS": "--entry-timeout 0"}
	var args []string
	for _, a := range strings.Fields(u.one(t, "Service", "ExecStart"))[1:] {
		if s, ok := vars[a]; ok {
			args = append(args, strings.Fields(s)...)
		} else {
			args = append(args, a)
		}
	}
	cmd := exec.Command(testutil.Binary(t), args...)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-done
		}
		if mountedType(t, v.Mountpoint) != "" {
			_ = syscall.Unmount(v.Mountpoint, syscall.MNT_DETACH)
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 256)
	n, err := conn.Read(buf)
	if err != nil || string(buf[:n]) != "READY=1" {
		t.Fatalf("notify socket: %q, %v (mount log:\n%s)", buf[:n], err, log.String())
	}
	if typ := mountedType(t, v.Mountpoint); typ != "fuse.shoal" {
		t.Fatalf("READY=1 before the mount serves (type %q)", typ)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after SIGTERM: %v\n%s", err, log.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30s after SIGTERM\n%s", log.String())
	}
	if typ := mountedType(t, v.Mountpoint); typ != "" {
		t.Fatalf("still mounted (%s) after SIGTERM", typ)
	}
}
