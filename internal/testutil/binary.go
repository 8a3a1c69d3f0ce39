package testutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var build struct {
	once sync.Once
	path string
	err  error
}

// scratch is this process's private 0755 directory for built binaries and
// other files that must outlive a single test; Main removes it.
var scratch struct {
	once sync.Once
	dir  string
	err  error
}

// ScratchDir returns a directory private to this test process, readable and
// searchable by every user (so helpers running as another uid can execute
// what is in it). Main removes it at the end of the run.
func ScratchDir() (string, error) {
	scratch.once.Do(func() {
		scratch.dir, scratch.err = os.MkdirTemp("", "shoal-test-")
		if scratch.err == nil {
			scratch.err = os.Chmod(scratch.dir, 0o755)
		}
	})
	return scratch.dir, scratch.err
}

// ModuleRoot returns the directory holding go.mod, searching upwards from
// the working directory (a test's package directory).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testutil: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Binary returns the path of a shoal binary built from this module's
// ./cmd/shoal, building it on the first call of the process. SHOAL_BINARY
// overrides the build; SHOAL_TEST_BUILDFLAGS adds go build flags.
func Binary(t testing.TB) string {
	t.Helper()
	build.once.Do(func() { build.path, build.err = buildBinary() })
	if build.err != nil {
		t.Fatalf("building shoal: %v", build.err)
	}
	return build.path
}

func buildBinary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		return filepath.Abs(p)
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	dir, err := ScratchDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "shoal")
	args := []string{"build", "-o", out}
	args = append(args, strings.Fields(os.Getenv(EnvBuildFlags))...)
	args = append(args, "./cmd/shoal")
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	return out, nil
}

// Result is the outcome of one run of the shoal binary.
type Result struct {
	Code   int    // exit code; -1 if it did not exit normally
	Stdout string // everything written to stdout
	Stderr string // everything written to stderr
}

// Run runs the shoal binary with args and returns its exit code and output.
// It fails t only if the binary could not be started.
func Run(t testing.TB, args ...string) Result {
	t.Helper()
	return RunTimeout(t, 2*time.Minute, args...)
}

// RunTimeout is Run with a time limit, after which the process is killed
// (Code is then -1): for commands that might wrongly stay in the foreground.
func RunTimeout(t testing.TB, limit time.Duration, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, Binary(t), args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := Result{Code: cmd.ProcessState.ExitCode(), Stdout: stdout.String(), Stderr: stderr.String()}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("shoal %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// MustRun runs the shoal binary and fails t unless it exits 0.
func MustRun(t testing.TB, args ...string) Result {
	t.Helper()
	res := Run(t, args...)
	if res.Code != 0 {
		t.Fatalf("shoal %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.Code, res.Stdout, res.Stderr)
	}
	return res
}
