package metrics_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"syscall"
	"testing"

	"shoal/internal/metrics"
	"shoal/internal/testutil"
)

// TestStatsAsAnotherUser: a user other than root finds a root mount's
// metrics by its mountpoint (`shoal stats MOUNTPOINT`), though the mount's
// runtime directory (/run/shoal) is root's alone, and reaches any mount's
// endpoint with --metrics ADDR.
func TestStatsAsAnotherUser(t *testing.T) {
	v := testutil.NewVolume(t)
	m := v.Mount(t, "--metrics", "127.0.0.1:0")
	url := endpoint(t, m)
	addr := url[len("http://") : len(url)-len("/metrics")]
	for _, args := range [][]string{
		{"stats", "--once", "--json", m.Dir},
		{"stats", "--once", "--json", "--metrics", addr},
	} {
		out, errOut, err := asNobody(t, args...)
		if err != nil {
			t.Errorf("shoal %v as uid 65534: %v\n%s", args, err, errOut)
			continue
		}
		var s metrics.Snapshot
		if err := json.Unmarshal(out, &s); err != nil || s.Uptime <= 0 {
			t.Errorf("shoal %v as uid 65534 printed %q (%v)", args, out, err)
		}
	}
}

// asNobody runs the shoal binary as uid and gid 65534 with a bare
// environment (no runtime directory of root's to inherit).
func asNobody(t *testing.T, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	cmd := exec.Command(testutil.Binary(t), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/"}
	cmd.Dir = "/"
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.Bytes(), errOut.Bytes(), err
}
