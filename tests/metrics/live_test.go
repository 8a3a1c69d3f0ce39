package metrics_test

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// writeLine is the live view's line for write requests.
var writeLine = regexp.MustCompile(`\n  write +[0-9]+/s +mean`)

// TestStatsLive: the live view redraws every interval while a writer
// runs, shows the writes, and ends cleanly on SIGINT.
func TestStatsLive(t *testing.T) {
	v := testutil.NewVolume(t)
	m := v.Mount(t, "--metrics", "127.0.0.1:0")
	endpoint(t, m)
	cmd := exec.Command(testutil.Binary(t), "stats", "--interval", "200ms", m.Dir)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	data := pattern(256 << 10)
	for deadline := time.Now().Add(1200 * time.Millisecond); time.Now().Before(deadline); {
		if err := os.WriteFile(m.Path("f"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("stats after SIGINT: %v\n%s", err, errOut.String())
	}
	frames := strings.Split(out.String(), "\033[H\033[2J")
	if len(frames) < 4 {
		t.Fatalf("%d frames in 1.2 s at 200 ms:\n%s", len(frames)-1, out.String())
	}
	// Every whole frame (the last may be cut short by the signal) has the
	// rate header, and the writes show in one of them at least: on a busy
	// machine one 256 KiB write and its close can take longer than a
	// 200 ms window, which then rightly counts none.
	shown := false
	for _, f := range frames[1 : len(frames)-1] {
		if !strings.Contains(f, "per second over the last") {
			t.Errorf("a frame without its rate header:\n%s", f)
		}
		shown = shown || writeLine.MatchString(f)
	}
	if !shown {
		t.Errorf("no frame during 1.2 s of writes shows them:\n%s", out.String())
	}
}
