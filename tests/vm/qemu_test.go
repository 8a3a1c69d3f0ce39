package vm

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// qemuTimeout bounds one qemu-img or qemu-io run.
const qemuTimeout = 2 * time.Minute

// requireQemu skips t without qemu-img and qemu-io, or fails it under
// SHOAL_REQUIRE_FUSE=1, where the test command has installed them.
func requireQemu(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"qemu-img", "qemu-io"} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := tool + " not found: install Debian's qemu-utils"
			if os.Getenv(testutil.EnvRequireFUSE) == "1" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
}

// qemu runs tool with args and returns its combined output and error.
func qemu(tool string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), qemuTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, tool, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", tool, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// mustQemu is qemu failing t on error.
func mustQemu(t testing.TB, tool string, args ...string) string {
	t.Helper()
	out, err := qemu(tool, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// cacheMode is how qemu opens an image: "none" is O_DIRECT (libvirt's
// default), "writeback" goes through the page cache.
type cacheMode string

const (
	cacheNone      cacheMode = "none"
	cacheWriteback cacheMode = "writeback"
)

// ioArgs builds a qemu-io command line running cmds on image.
func ioArgs(format string, cache cacheMode, image string, cmds ...string) []string {
	args := []string{"-f", format, "-t", string(cache)}
	for _, c := range cmds {
		args = append(args, "-c", c)
	}
	return append(args, image)
}

// qemuIO runs qemu-io commands on image and fails t if any fails
// (qemu-io exits 1 on an I/O error or a pattern mismatch).
func qemuIO(t testing.TB, format string, cache cacheMode, image string, cmds ...string) string {
	t.Helper()
	return mustQemu(t, "qemu-io", ioArgs(format, cache, image, cmds...)...)
}

// holder is an interactive qemu-io process keeping an image open (and
// so its locks held) until it quits or is killed.
type holder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed when the process has exited
}

// holdImage starts qemu-io holding image open read-write with O_DIRECT
// and returns once the image is open (a first read has answered).
func holdImage(t testing.TB, format, image string) *holder {
	t.Helper()
	cmd := exec.Command("qemu-io", ioArgs(format, cacheNone, image)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	opened := make(chan bool, 1)
	go h.watch(out, opened)
	t.Cleanup(h.kill)
	if _, err := io.WriteString(stdin, "read 0 512\n"); err != nil {
		t.Fatalf("qemu-io holding %s: %v", image, err)
	}
	select {
	case ok := <-opened:
		if !ok {
			t.Fatalf("qemu-io could not open %s read-write", image)
		}
	case <-time.After(qemuTimeout):
		t.Fatalf("qemu-io holding %s: no answer", image)
	}
	return h
}

// watch reads qemu-io's output until it exits, reporting on opened
// whether the first read answered.
func (h *holder) watch(out io.Reader, opened chan<- bool) {
	sc := bufio.NewScanner(out)
	reported := false
	for sc.Scan() {
		if !reported && strings.Contains(sc.Text(), "read 512/512") {
			opened <- true
			reported = true
		}
	}
	if !reported {
		opened <- false
	}
	_ = h.cmd.Wait()
	close(h.done)
}

// quit ends the holder as a clean shutdown: qemu drops its locks itself.
func (h *holder) quit(t testing.TB) {
	t.Helper()
	_, _ = io.WriteString(h.stdin, "quit\n")
	_ = h.stdin.Close()
	h.wait(t)
}

// kill9 ends the holder with SIGKILL, as a crash: only the file system
// can drop its locks, when the kernel closes the file.
func (h *holder) kill9(t testing.TB) {
	t.Helper()
	_ = h.cmd.Process.Signal(syscall.SIGKILL)
	h.wait(t)
}

func (h *holder) wait(t testing.TB) {
	t.Helper()
	select {
	case <-h.done:
	case <-time.After(qemuTimeout):
		t.Fatal("qemu-io did not exit")
	}
}

// kill is the cleanup: SIGKILL unless the process is gone.
func (h *holder) kill() {
	select {
	case <-h.done:
		return
	default:
	}
	_ = h.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-h.done:
	case <-time.After(qemuTimeout):
	}
}
