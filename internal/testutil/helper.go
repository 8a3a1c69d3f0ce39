package testutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// envHelper names the helper a re-executed test binary runs instead of its
// tests; the helper's arguments follow in os.Args.
const envHelper = "SHOAL_TEST_HELPER"

// Nobody is the unprivileged user that permission tests run helpers as.
var Nobody = &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}

var helpers = map[string]func(args []string) int{}

// RegisterHelper makes fn runnable in a subprocess by RunHelper(name). Call
// it from TestMain (or init) before Main; fn's return value is the exit code.
func RegisterHelper(name string, fn func(args []string) int) {
	helpers[name] = fn
}

// runHelperIfAsked runs the helper named in the environment, if any, and
// reports whether it did (with the exit code).
func runHelperIfAsked() (int, bool) {
	name := os.Getenv(envHelper)
	if name == "" {
		return 0, false
	}
	fn, ok := helpers[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown test helper %q\n", name)
		return 2, true
	}
	args := os.Args[1:]
	if i := indexArg(args, "--"); i >= 0 {
		args = args[i+1:]
	}
	return fn(args), true
}

func indexArg(args []string, s string) int {
	for i, a := range args {
		if a == s {
			return i
		}
	}
	return -1
}

var selfCopy struct {
	once sync.Once
	path string
	err  error
}

// helperBinary returns a copy of the test binary in the scratch directory,
// which every user can execute (go test's own build dir is private to root).
func helperBinary() (string, error) {
	selfCopy.once.Do(func() {
		dir, err := ScratchDir()
		if err != nil {
			selfCopy.err = err
			return
		}
		selfCopy.path = filepath.Join(dir, "testhelper")
		selfCopy.err = copyFile(os.Args[0], selfCopy.path, 0o755)
	})
	return selfCopy.path, selfCopy.err
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// HelperCmd returns a command that runs the registered helper name with
// args in a copy of the test binary, as cred (nil: as this process's user).
func HelperCmd(t testing.TB, cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	t.Helper()
	bin, err := helperBinary()
	if err != nil {
		t.Fatalf("copying test binary for helpers: %v", err)
	}
	cmd := exec.Command(bin, append([]string{"-test.run=^$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), envHelper+"="+name)
	cmd.Dir = "/"
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	return cmd
}

// RunHelper runs the helper to completion and returns its trimmed stdout
// and exit code; stderr is logged. It fails t if the helper cannot start.
func RunHelper(t testing.TB, cred *syscall.Credential, name string, args ...string) (string, int) {
	t.Helper()
	cmd := HelperCmd(t, cred, name, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("helper %s %v: %v", name, args, err)
	}
	if stderr.Len() > 0 {
		t.Logf("helper %s %v stderr: %s", name, args, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), cmd.ProcessState.ExitCode()
}
