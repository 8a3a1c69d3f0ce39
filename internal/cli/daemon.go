package cli

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"shoal/internal/secret"
)

// readyEnv names the file descriptor a background mount reports on.
const readyEnv = "SHOAL_READY_FD"

// readyPipe is the child's end of the background handshake: "ok" once the
// mount serves, or the error that stopped it.
type readyPipe struct{ f *os.File }

func readyFromEnv() *readyPipe {
	if os.Getenv(readyEnv) == "" {
		return nil
	}
	os.Unsetenv(readyEnv)
	return &readyPipe{f: os.NewFile(3, "ready")}
}

func (r *readyPipe) ok() {
	_, _ = r.f.WriteString("ok")
	_ = r.f.Close()
}

func (r *readyPipe) fail(err error) {
	_, _ = r.f.WriteString(secret.Mask(err.Error()))
	_ = r.f.Close()
}

// daemonize re-runs this command without --background in a new session,
// logging to a file, and waits until the child reports the mount ready.
// A password in metaURL reaches the child in its environment
// (SHOAL_META_PASSWORD, readable only by the owner and root), not argv.
func daemonize(metaURL, mp string, o mountOptions, out io.Writer) error {
	logPath := o.logFile
	if logPath == "" {
		logPath = filepath.Join(os.TempDir(), "shoal-mount-"+strings.ReplaceAll(strings.Trim(mp, "/"), "/", "_")+".log")
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("log file for the background mount: %w", err)
	}
	defer logFile.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args, password := childArgs(os.Args[1:], metaURL, logPath)
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), readyEnv+"=3")
	if password != "" {
		cmd.Env = append(cmd.Env, secret.PasswordEnv+"="+password)
	}
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("starting the background mount: %w", err)
	}
	w.Close()
	msg, _ := io.ReadAll(r)
	if string(msg) != "ok" {
		_ = cmd.Wait()
		code := cmd.ProcessState.ExitCode() // the child's: 4 for a missing volume
		if code <= 0 {
			code = ExitError
		}
		if len(msg) == 0 {
			return withCode(code, fmt.Errorf("the background mount exited before it was ready; see %s", logPath))
		}
		return withCode(code, fmt.Errorf("%s (log: %s)", msg, logPath))
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	fmt.Fprintf(out, "mounted at %s (pid %d, log %s)\n", mp, pid, logPath)
	return nil
}

// childArgs drops --background from args, takes the password out of
// metaURL (returning it) and points the log at logPath.
func childArgs(args []string, metaURL, logPath string) ([]string, string) {
	stripped, password := secret.Split(metaURL)
	out := make([]string, 0, len(args)+2)
	for _, a := range args {
		switch {
		case a == "--background" || a == "-d" || strings.HasPrefix(a, "--background="):
		case a == metaURL:
			out = append(out, stripped)
		default:
			out = append(out, a)
		}
	}
	return append(out, "--log", logPath), password
}
