package testutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"shoal/internal/rundir"
)

// Timeouts of the mount harness.
const (
	mountTimeout   = 30 * time.Second // from exec to the mount showing in mountinfo
	unmountTimeout = 60 * time.Second // for `shoal umount` (it flushes first)
	exitTimeout    = 30 * time.Second // for the mount process to exit after unmount
)

var mountSeq atomic.Int64

// Mount is a running `shoal mount` (or `shoal up`) subprocess in the
// foreground.
type Mount struct {
	Dir  string   // the mountpoint
	Log  string   // file holding the mount process's stdout and stderr
	Vol  *Volume  // the mounted volume (nil for StartMount)
	Args []string // the full shoal command line, without the binary

	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	waitErr error         // the process's exit status, valid after done
	stopped bool          // Unmount or Kill9 already ran
}

// Mount runs `shoal mount META-URL MOUNTPOINT extraArgs...` in the
// foreground as a subprocess and returns once the mountpoint shows in
// /proc/self/mountinfo. A t.Cleanup unmounts it.
func (v *Volume) Mount(t testing.TB, extraArgs ...string) *Mount {
	t.Helper()
	return v.MountAt(t, v.Mountpoint, extraArgs...)
}

// MountAt is Mount on another mountpoint, which must exist.
func (v *Volume) MountAt(t testing.TB, dir string, extraArgs ...string) *Mount {
	t.Helper()
	args := append([]string{"mount", v.MetaURL, dir}, extraArgs...)
	m := StartMount(t, dir, filepath.Join(v.Dir, fmt.Sprintf("mount-%d.log", mountSeq.Add(1))), args...)
	m.Vol = v
	return m
}

// StartMount runs `shoal args...`, a command expected to mount dir and stay
// in the foreground, logging to logFile, and returns once dir is mounted.
// A t.Cleanup unmounts it.
func StartMount(t testing.TB, dir, logFile string, args ...string) *Mount {
	t.Helper()
	RequireFUSE(t)
	m := &Mount{Dir: dir, Log: logFile, Args: args, done: make(chan struct{})}
	if err := m.start(t); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !m.stopped {
			m.Unmount(t)
		}
		if t.Failed() {
			m.dumpLog(t)
		}
	})
	if err := m.waitMounted(); err != nil {
		m.dumpLog(t)
		t.Fatalf("shoal mount %s: %v", dir, err)
	}
	return m
}

func (m *Mount) start(t testing.TB) error {
	logf, err := os.OpenFile(m.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	m.cmd = exec.Command(Binary(t), m.Args...)
	m.cmd.Stdout, m.cmd.Stderr = logf, logf
	// Own process group, so a ^C to `go test` reaches the mount only
	// through our cleanup; SIGTERM if the test process dies first.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := m.cmd.Start(); err != nil {
		return fmt.Errorf("starting shoal mount: %w", err)
	}
	register(m)
	go func() {
		m.waitErr = m.cmd.Wait()
		close(m.done)
	}()
	return nil
}

// waitMounted polls mountinfo until m.Dir is a FUSE mount, the process
// exits, or the timeout passes.
func (m *Mount) waitMounted() error {
	deadline := time.Now().Add(mountTimeout)
	for time.Now().Before(deadline) {
		if isFUSEMount(m.Dir) {
			return nil
		}
		select {
		case <-m.done:
			m.stopped = true
			unregister(m)
			return fmt.Errorf("mount process exited before mounting: %v", m.waitErr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	m.kill()
	return fmt.Errorf("not mounted after %v", mountTimeout)
}

// PID is the mount process's id.
func (m *Mount) PID() int { return m.cmd.Process.Pid }

// Path joins elem to the mountpoint.
func (m *Mount) Path(elem ...string) string {
	return filepath.Join(append([]string{m.Dir}, elem...)...)
}

// LogText returns what the mount process has logged so far.
func (m *Mount) LogText() string {
	b, _ := os.ReadFile(m.Log)
	return string(b)
}

// Unmount runs `shoal umount` (falling back to `fusermount3 -u -z`), waits
// for the mount process to exit and fails t if it exits non-zero or not at
// all.
func (m *Mount) Unmount(t testing.TB) {
	t.Helper()
	if m.stopped {
		return
	}
	m.stopped = true
	defer unregister(m)
	err := m.umountCmd(t)
	// A process that has just closed its last file there (a helper that
	// is exiting, a scan of the mount table) can keep the mount busy for
	// a moment: retry briefly before calling it a failure.
	for try := 0; err != nil && strings.Contains(strings.ToLower(err.Error()), "busy") && try < 10; try++ {
		time.Sleep(200 * time.Millisecond)
		err = m.umountCmd(t)
	}
	if err != nil {
		t.Errorf("shoal umount %s: %v; falling back to fusermount3 -u -z", m.Dir, err)
		if errors.Is(err, context.DeadlineExceeded) {
			m.stacks(t) // a request the server never answered holds the unmount
		}
		lazyUnmount(m.Dir)
	}
	select {
	case <-m.done:
	case <-time.After(exitTimeout):
		m.stacks(t)
		m.kill()
		t.Errorf("mount process %d did not exit within %v of unmounting", m.PID(), exitTimeout)
		return
	}
	if m.waitErr != nil {
		t.Errorf("mount process exited with %v after unmount", m.waitErr)
		m.dumpLog(t)
	}
	if isFUSEMount(m.Dir) {
		t.Errorf("%s is still mounted after unmount", m.Dir)
		lazyUnmount(m.Dir)
	}
}

func (m *Mount) umountCmd(t testing.TB) error {
	ctx, cancel := context.WithTimeout(context.Background(), unmountTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, Binary(t), "umount", m.Dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Remount unmounts m and runs the same command again.
func (m *Mount) Remount(t testing.TB) *Mount {
	t.Helper()
	m.Unmount(t)
	n := StartMount(t, m.Dir, fmt.Sprintf("%s.%d", m.Log, mountSeq.Add(1)), m.Args...)
	n.Vol = m.Vol
	return n
}

// Kill9 kills the mount process with SIGKILL, as a crash would, then
// detaches the dead mount so the mountpoint is usable again.
func (m *Mount) Kill9(t testing.TB) {
	t.Helper()
	if m.stopped {
		return
	}
	m.stopped = true
	defer unregister(m)
	m.kill()
	lazyUnmount(m.Dir)
	if isFUSEMount(m.Dir) {
		t.Errorf("%s still mounted after kill -9 and fusermount3 -u -z", m.Dir)
	}
}

// kill sends SIGKILL and waits for the process to be reaped.
func (m *Mount) kill() {
	_ = m.cmd.Process.Kill()
	select {
	case <-m.done:
	case <-time.After(exitTimeout):
	}
}

// Signal sends sig to the mount process (e.g. SIGTERM for a clean stop) and
// waits up to the exit timeout for it to exit, returning its exit status.
func (m *Mount) Signal(t testing.TB, sig syscall.Signal) error {
	t.Helper()
	m.Send(t, sig)
	exited, err := m.Wait(exitTimeout)
	if !exited {
		t.Fatalf("mount process did not exit within %v of %v", exitTimeout, sig)
	}
	return err
}

// Send sends sig to the mount process and returns at once.
func (m *Mount) Send(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := m.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

// Wait waits up to d for the mount process to exit and reports whether it
// did, with its exit status. An exited mount needs no unmount.
func (m *Mount) Wait(d time.Duration) (exited bool, err error) {
	select {
	case <-m.done:
		m.stopped = true
		unregister(m)
		return true, m.waitErr
	case <-time.After(d):
		return false, nil
	}
}

// Exited reports whether the mount process has exited.
func (m *Mount) Exited() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// stacks makes a hung mount's server (or the mount process, when no
// server is known) print every goroutine's stack into its log, with
// SIGQUIT (the Go runtime's dump; the process exits), and logs the log.
func (m *Mount) stacks(t testing.TB) {
	t.Helper()
	pid := m.ServerPID(t)
	if pid <= 0 {
		pid = m.PID()
	}
	if syscall.Kill(pid, syscall.SIGQUIT) != nil {
		return
	}
	time.Sleep(2 * time.Second)
	m.dumpLogMax(t, 512<<10)
}

func (m *Mount) dumpLog(t testing.TB) {
	t.Helper()
	m.dumpLogMax(t, 32<<10)
}

func (m *Mount) dumpLogMax(t testing.TB, max int) {
	t.Helper()
	text := m.LogText()
	if len(text) > max {
		text = "...\n" + text[len(text)-max:]
	}
	t.Logf("log of shoal mount %s (%s):\n%s", m.Dir, m.Log, text)
}

// lazyUnmount detaches dir with fusermount3 -u -z (umount -l as a last resort).
func lazyUnmount(dir string) {
	if err := exec.Command("fusermount3", "-u", "-z", dir).Run(); err != nil {
		_ = syscall.Unmount(dir, syscall.MNT_DETACH)
	}
}

// ServerPID is the pid of the process serving m: under a supervisor (the
// default as root), not PID's. 0 while no server has said (a successor
// is starting).
func (m *Mount) ServerPID(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile(rundir.Path(m.Dir, ".pid"))
	if err != nil {
		return 0
	}
	var pid int
	_, _ = fmt.Sscan(string(b), &pid)
	return pid
}

// WaitServerPID is ServerPID once the server has said, waiting up to 10 s:
// it writes its pid file just after the kernel mount shows. 0 if none did.
func (m *Mount) WaitServerPID(t testing.TB) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if pid := m.ServerPID(t); pid != 0 || time.Now().After(deadline) {
			return pid
		}
	}
}
