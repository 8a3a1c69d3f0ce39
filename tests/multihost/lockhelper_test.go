package multihost

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
)

// helperLocker is a process that holds locks for a test. It reads one
// command per line from stdin and answers each with one line on stdout:
//
//	open PATH                  open (creating) PATH read-write       → OK | ERRNO
//	flock sh|ex|un [nb]        flock(2) on the open file              → OK | ERRNO
//	setlk rd|wr|un START LEN   fcntl(F_SETLK)                         → OK | ERRNO
//	setlkw rd|wr|un START LEN  fcntl(F_SETLKW), blocking              → OK | ERRNO
//	getlk rd|wr START LEN      fcntl(F_GETLK)                         → UNLCK | RDLCK|WRLCK PID START LEN
//	write TEXT                 pwrite TEXT and a newline at offset 0,
//	                           then fsync                           → OK | ERRNO
//	close                      close the open file                   → OK | ERRNO
//	pid                        this process's id                     → PID
//
// It exits at end of input.
func helperLocker(args []string) int {
	var f *os.File
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		words := strings.Fields(in.Text())
		if len(words) == 0 {
			continue
		}
		var reply string
		if words[0] == "open" {
			var err error
			f, err = os.OpenFile(words[1], os.O_CREATE|os.O_RDWR, 0o644)
			reply = errText(err)
		} else {
			reply = lockCommand(f, words)
		}
		fmt.Println(reply)
	}
	return 0
}

// lockCommand runs one command other than open.
func lockCommand(f *os.File, words []string) string {
	if words[0] == "pid" {
		return strconv.Itoa(os.Getpid())
	}
	if f == nil {
		return "EBADF"
	}
	fd := int(f.Fd())
	switch words[0] {
	case "close":
		return errText(f.Close())
	case "write":
		if _, err := f.WriteAt([]byte(strings.Join(words[1:], " ")+"\n"), 0); err != nil {
			return errText(err)
		}
		return errText(f.Sync())
	case "flock":
		how := map[string]int{"sh": unix.LOCK_SH, "ex": unix.LOCK_EX, "un": unix.LOCK_UN}[words[1]]
		if len(words) > 2 && words[2] == "nb" {
			how |= unix.LOCK_NB
		}
		return errText(unix.Flock(fd, how))
	case "setlk", "setlkw":
		cmd := unix.F_SETLK
		if words[0] == "setlkw" {
			cmd = unix.F_SETLKW
		}
		lk := parseFlock(words[1:])
		return errText(unix.FcntlFlock(uintptr(fd), cmd, &lk))
	case "getlk":
		lk := parseFlock(words[1:])
		if err := unix.FcntlFlock(uintptr(fd), unix.F_GETLK, &lk); err != nil {
			return errText(err)
		}
		if lk.Type == unix.F_UNLCK {
			return "UNLCK"
		}
		return fmt.Sprintf("%s %d %d %d", lockTypeName(lk.Type), lk.Pid, lk.Start, lk.Len)
	}
	return "EINVAL"
}

// parseFlock reads TYPE START LEN.
func parseFlock(words []string) unix.Flock_t {
	typ := map[string]int16{"rd": unix.F_RDLCK, "wr": unix.F_WRLCK, "un": unix.F_UNLCK}[words[0]]
	start, _ := strconv.ParseInt(words[1], 10, 64)
	n, _ := strconv.ParseInt(words[2], 10, 64)
	return unix.Flock_t{Type: typ, Whence: io.SeekStart, Start: start, Len: n}
}

func lockTypeName(t int16) string {
	switch t {
	case unix.F_RDLCK:
		return "RDLCK"
	case unix.F_WRLCK:
		return "WRLCK"
	}
	return "UNLCK"
}

// errText is "OK" or the errno's name.
func errText(err error) string {
	var errno syscall.Errno
	switch {
	case err == nil:
		return "OK"
	case errors.As(err, &errno):
		return unix.ErrnoName(errno)
	}
	return "ERROR " + err.Error()
}

// locker drives one helperLocker process.
type locker struct {
	t       *testing.T
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	replies chan string
	pid     int
}

// startLocker starts a locker process named name (for messages) that has
// path open, and stops it when the test ends.
func startLocker(t *testing.T, name, path string) *locker {
	t.Helper()
	c, stdin, stdout := startHelperProc(t, "locker", name)
	l := &locker{t: t, name: name, cmd: c, stdin: stdin, replies: make(chan string, 16), pid: c.Process.Pid}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			l.replies <- sc.Text()
		}
		close(l.replies)
	}()
	t.Cleanup(l.stop)
	l.must("open "+path, "OK")
	return l
}

// send writes one command without waiting for its answer.
func (l *locker) send(line string) {
	l.t.Helper()
	if _, err := fmt.Fprintln(l.stdin, line); err != nil {
		l.t.Fatalf("locker %s: send %q: %v", l.name, line, err)
	}
}

// reply waits up to limit for the next answer; ok is false on timeout or
// when the process has gone.
func (l *locker) reply(limit time.Duration) (string, bool) {
	select {
	case r, ok := <-l.replies:
		return r, ok
	case <-time.After(limit):
		return "", false
	}
}

// do sends a command and returns its answer (failing t after 30 s).
func (l *locker) do(line string) string {
	l.t.Helper()
	l.send(line)
	r, ok := l.reply(30 * time.Second)
	if !ok {
		l.t.Fatalf("locker %s: no answer to %q", l.name, line)
	}
	return r
}

// must runs a command and fails t unless the answer is want.
func (l *locker) must(line, want string) {
	l.t.Helper()
	if got := l.do(line); got != want {
		l.t.Fatalf("locker %s: %q answered %q, want %q", l.name, line, got, want)
	}
}

// kill9 kills the locker with SIGKILL and waits for it.
func (l *locker) kill9() {
	_ = l.cmd.Process.Kill()
	_ = l.cmd.Wait()
}

// stop ends the locker: end of input, then SIGKILL if it lingers.
func (l *locker) stop() { stopHelperProc(l.cmd, l.stdin) }

// startHelperProc starts the test binary as helper kind (named name in
// messages), its stdin and stdout piped to the caller, its stderr the
// test's.
func startHelperProc(t *testing.T, kind, name string) (*exec.Cmd, io.WriteCloser, io.ReadCloser) {
	t.Helper()
	c := testutil.HelperCmd(t, nil, kind)
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatalf("starting %s %s: %v", kind, name, err)
	}
	return c, stdin, stdout
}

// stopHelperProc ends a helper: end of input, then SIGKILL if it lingers.
func stopHelperProc(c *exec.Cmd, stdin io.WriteCloser) {
	stdin.Close()
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = c.Process.Kill()
		<-done
	}
}
