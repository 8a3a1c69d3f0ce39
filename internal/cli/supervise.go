package cli

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/rundir"
	"shoal/internal/secret"
)

// A supervised mount is two processes. The supervisor (the process the
// user started) does nothing but keep the kernel connection's descriptor
// and a server process running: the server mounts, sends it the
// descriptor, and serves. When the server dies (kill -9, a crash) the
// supervisor starts another that takes the connection over from the
// journal (internal/journal) without the mount going away; when asked to
// upgrade (`shoal mount --upgrade MOUNTPOINT`, or SIGHUP), it has the server
// quiesce — answer what it is serving, hold back the rest, flush — and
// starts the new binary in its place. A server that exits 0 after an
// unmount ends the supervisor too.

// serveEnv tells a server process its role: roleServe (first server,
// mounts) or roleTakeOver (successor). Its control socket is fd 3, the
// kernel connection of a successor fd 4.
const (
	serveEnv     = "SHOAL_SERVER_ROLE"
	roleServe    = "serve"
	roleTakeOver = "takeover"
)

// Past maxRestarts in restartWindow the supervisor waits before each
// restart, doubling up to maxBackoff: a server that dies at once (a bug,
// an engine it cannot reach) is not restarted in a hot loop, and the
// mount stays — applications wait rather than fail.
const (
	maxRestarts   = 5
	restartWindow = time.Minute
	maxBackoff    = 30 * time.Second
)

// journalDir is where a mount's journal lives.
func journalDir(mp string) string { return rundir.Path(mp, ".journal") }

// controlPath is the supervisor's socket for upgrade requests.
func controlPath(mp string) string { return rundir.Path(mp, ".sock") }

// child is one server process and its control socket.
type child struct {
	cmd  *exec.Cmd
	ctl  *os.File
	msgs chan childMsg
	exit chan error
}

type childMsg struct {
	text string
	fd   int // a descriptor sent with the message, or -1
}

type upgradeReq struct {
	exe   string
	reply net.Conn
}

// supervise runs the mount as a supervisor and returns when the mount
// ends.
func supervise(metaURL, mp string, o mountOptions, ready *readyPipe) error {
	logger, closeLog, err := openLogger(o.logFile, o.debug)
	if err != nil {
		return err
	}
	defer closeLog()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args, password := supervisedArgs(os.Args[1:], metaURL)
	upgrades, stopListen, err := listenUpgrades(controlPath(mp), logger)
	if err != nil {
		return err
	}
	defer stopListen()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	s := &supervisor{mp: mp, exe: exe, args: args, password: password, log: logger, conn: -1}
	cur, err := s.start(roleServe, exe)
	if err != nil {
		return err
	}
	var (
		lastErr   string
		upgrading *upgradeReq
		handing   bool // the server was asked to quiesce for upgrading
		curReady  bool // the current server said ready: it handles SIGTERM
		stopping  bool // SIGINT or SIGTERM came: end the mount, restart nothing
		started   time.Time
		restarts  []time.Time
		announced bool
		// While no server runs (cur is idle), restartAt fires when the
		// next one starts, with restartExe.
		restartAt  <-chan time.Time
		restartExe = exe
	)
	for {
		select {
		case <-restartAt:
			restartAt = nil
			next, err := s.start(roleTakeOver, restartExe)
			if err != nil {
				restarts = append(restarts, time.Now())
				wait := max(backoff(restarts), time.Second)
				logger.Error("cannot start a server to take the mount over; retrying (applications in the mount wait)", "wait", wait, "exe", restartExe, "err", err)
				if upgrading != nil {
					fmt.Fprintf(upgrading.reply, "error the new server did not start (%v); the mount is served by %s again\n", err, exe)
					upgrading.reply.Close()
					upgrading = nil
				}
				restartExe, restartAt = exe, time.After(wait)
				continue
			}
			cur = next
		case m := <-cur.msgs:
			switch {
			case m.fd >= 0, strings.HasPrefix(m.text, "error "):
				lastErr = s.note(m, lastErr)
			case m.text == "ready":
				curReady = true
				if stopping {
					_ = cur.cmd.Process.Signal(syscall.SIGTERM)
				}
				if !announced {
					if ready != nil {
						ready.ok()
					}
					notifyReady() // systemd (Type=notify) hears from the main process
				}
				announced = true
				if upgrading != nil {
					took := time.Since(started)
					logger.Info("upgrade done: the new server serves the mount", "took", took.Round(time.Millisecond), "exe", upgrading.exe)
					fmt.Fprintf(upgrading.reply, "ok %d\n", took.Milliseconds())
					upgrading.reply.Close()
					upgrading = nil
				}
			}
		case req := <-upgrades:
			if upgrading != nil || s.conn < 0 {
				fmt.Fprintf(req.reply, "error an upgrade is under way or the mount is not ready\n")
				req.reply.Close()
				continue
			}
			if cur.cmd == nil { // no server runs: start the new one now
				upgrading, started, restartExe, restartAt = &req, time.Now(), req.exe, time.After(0)
				continue
			}
			upgrading, started, handing = &req, time.Now(), true
			logger.Info("upgrade: quiescing the server", "exe", req.exe)
			_, _ = cur.ctl.Write([]byte("quiesce"))
		case sig := <-sigs:
			if sig == syscall.SIGHUP && upgrading == nil && s.conn >= 0 {
				r := upgradeReq{exe: exe, reply: discardConn{}}
				if cur.cmd == nil {
					upgrading, started, restartAt = &r, time.Now(), time.After(0)
					continue
				}
				upgrading, started, handing = &r, time.Now(), true
				_, _ = cur.ctl.Write([]byte("quiesce"))
				continue
			}
			if sig != syscall.SIGHUP {
				// A server that is not ready yet gets it once it is
				// (until then SIGTERM would kill it without a flush).
				stopping = true
				if curReady {
					_ = cur.cmd.Process.Signal(syscall.SIGTERM)
				}
				if cur.cmd == nil {
					// Waiting to restart: start a server now, which
					// flushes and unmounts once it is ready.
					restartAt = time.After(0)
				}
			}
		case werr := <-cur.exit:
			for len(cur.msgs) > 0 { // select took the exit before them
				lastErr = s.note(<-cur.msgs, lastErr)
			}
			cur.ctl.Close()
			cur, curReady = &child{}, false // idle until the next start
			if handing {
				handing = false
				restartExe, restartAt = upgrading.exe, time.After(0)
				continue
			}
			if upgrading != nil { // the new server died before serving
				fmt.Fprintf(upgrading.reply, "error the new server exited before serving (%v); the mount is served by %s again\n", werr, exe)
				upgrading.reply.Close()
				upgrading = nil
			}
			if s.conn < 0 {
				// The server failed to mount and said why on its
				// stderr (ours): exit as it did, without repeating it.
				if lastErr == "" {
					lastErr = fmt.Sprintf("the server exited before mounting (%v)", werr)
				}
				if ready != nil && !announced {
					ready.fail(errors.New(lastErr))
				}
				return withCode(childCode(werr), errReported)
			}
			// Our mount, not whatever is mounted at mp now: after an
			// umount(8) a new mount may be there already.
			if mounted := s.mounted(); !mounted || stopping {
				if mounted {
					_ = syscall.Unmount(mp, syscall.MNT_DETACH)
					return fmt.Errorf("the server exited (%v) while stopping; %s was detached", werr, mp)
				}
				if werr != nil {
					return fmt.Errorf("the server exited (%v) and %s is no longer mounted", werr, mp)
				}
				logger.Info("unmounted", "mountpoint", mp)
				return nil
			}
			restarts = append(restarts, time.Now())
			wait := backoff(restarts)
			if wait > 0 {
				logger.Error("the server keeps dying; waiting before the next restart (applications in the mount wait too; see the log above for why it dies)", "wait", wait, "last", werr)
			} else {
				logger.Error("the server died; starting one that takes the mount over", "err", werr)
			}
			restartExe, restartAt = exe, time.After(wait)
		}
	}
}

type supervisor struct {
	mp       string
	exe      string
	args     []string
	password string
	log      *slog.Logger
	conn     int      // the kernel connection (-1 until the first server sends it)
	connFile *os.File // conn, kept open
}

// mounted reports whether the supervisor's mount is still mounted: its
// kernel connection is alive (the kernel aborts it when the file system
// is unmounted, and poll then says POLLERR) and something is mounted at
// the mountpoint. Only a mount's connection tells it apart from a later
// mount at the same place (which may get the same device number).
func (s *supervisor) mounted() bool {
	if _, _, ok := mountedAt(s.mp); !ok || s.conn < 0 {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(s.conn), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && fds[0].Revents&(unix.POLLERR|unix.POLLNVAL|unix.POLLHUP) == 0
	}
}

// note takes in a server's message other than "ready": the connection's
// descriptor (held for the life of the supervisor: an *os.File dropped
// would close it when collected), or why it failed, returned as the
// latest error (lastErr otherwise).
func (s *supervisor) note(m childMsg, lastErr string) string {
	switch {
	case m.fd >= 0:
		s.conn, s.connFile = m.fd, os.NewFile(uintptr(m.fd), "/dev/fuse")
	case strings.HasPrefix(m.text, "error "):
		return strings.TrimPrefix(m.text, "error ")
	}
	return lastErr
}

// start starts a server process with role.
func (s *supervisor) start(role, exe string) (*child, error) {
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "ctl"), os.NewFile(uintptr(pair[1]), "ctl")
	defer theirs.Close()
	cmd := exec.Command(exe, s.args...)
	cmd.Env = append(os.Environ(), serveEnv+"="+role)
	if s.password != "" {
		cmd.Env = append(cmd.Env, secret.PasswordEnv+"="+s.password)
	}
	cmd.ExtraFiles = []*os.File{theirs}
	if role == roleTakeOver {
		cmd.ExtraFiles = append(cmd.ExtraFiles, s.connFile)
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// The supervisor is the mount's process: killed, it takes the server
	// with it (as a crash of the machine would).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		mine.Close()
		return nil, fmt.Errorf("starting the mount's server: %w", err)
	}
	c := &child{cmd: cmd, ctl: mine, msgs: make(chan childMsg, 8), exit: make(chan error, 1)}
	read := make(chan struct{})
	go func() { c.read(); close(read) }()
	go func() {
		err := cmd.Wait()
		// What the server said before it exited (why it failed) comes
		// before its exit: the socket's end is read to EOF first (for
		// at most a second, in case something the server started still
		// holds its end), and the exit case takes what is buffered.
		select {
		case <-read:
		case <-time.After(time.Second):
		}
		c.exit <- err
	}()
	s.log.Debug("server started", "role", role, "pid", cmd.Process.Pid)
	return c, nil
}

// read forwards the child's control messages until its socket closes.
func (c *child) read() {
	buf, oob := make([]byte, 4096), make([]byte, unix.CmsgSpace(4))
	for {
		// MSG_CMSG_CLOEXEC: the connection received must not leak into
		// every server started later (they get it as fd 4 on purpose).
		n, oobn, _, _, err := unix.Recvmsg(int(c.ctl.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != nil || (n == 0 && oobn == 0) {
			return
		}
		m := childMsg{text: string(buf[:n]), fd: -1}
		if oobn > 0 {
			if cms, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(cms) > 0 {
				if fds, err := unix.ParseUnixRights(&cms[0]); err == nil && len(fds) > 0 {
					m.fd = fds[0]
				}
			}
		}
		c.msgs <- m
	}
}

// supervisedArgs are the server's arguments: the mount's own, with the
// password moved out of the META-URL (into the environment).
func supervisedArgs(args []string, metaURL string) ([]string, string) {
	stripped, password := secret.Split(metaURL)
	out := make([]string, 0, len(args))
	for _, a := range args {
		switch {
		case a == "--background" || a == "-d" || strings.HasPrefix(a, "--background="):
		case a == metaURL:
			out = append(out, stripped)
		default:
			out = append(out, a)
		}
	}
	return out, password
}

// listenUpgrades accepts upgrade requests on path: a line "upgrade EXE".
func listenUpgrades(path string, logger *slog.Logger) (<-chan upgradeReq, func(), error) {
	if _, err := rundir.Ensure(); err != nil {
		return nil, nil, err
	}
	_ = os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, nil, fmt.Errorf("control socket: %w", err)
	}
	_ = os.Chmod(path, 0o600)
	mine, _ := os.Stat(path)
	if ul, ok := l.(*net.UnixListener); ok {
		ul.SetUnlinkOnClose(false) // stop removes it, if it is still ours
	}
	reqs := make(chan upgradeReq)
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			line, err := bufio.NewReader(conn).ReadString('\n')
			exe, ok := strings.CutPrefix(strings.TrimSpace(line), "upgrade ")
			if err != nil || !ok || exe == "" {
				conn.Close()
				continue
			}
			reqs <- upgradeReq{exe: exe, reply: conn}
		}
	}()
	stop := func() {
		l.Close()
		// Not the socket of a later mount at the same place (which
		// replaced ours at its start).
		if now, err := os.Stat(path); err == nil && mine != nil && os.SameFile(now, mine) {
			os.Remove(path)
		}
	}
	return reqs, stop, nil
}

// requestUpgrade asks the supervisor of mp to replace its server with
// this binary, and waits until the new one serves.
func requestUpgrade(mp string) (time.Duration, error) {
	abs, err := filepath.Abs(mp)
	if err != nil {
		return 0, err
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	conn, err := net.Dial("unix", controlPath(abs))
	if err != nil {
		return 0, withCode(ExitNotFound, fmt.Errorf("no supervised Shoal mount at %s (%v): only mounts started by this version's 'shoal mount' as root can be upgraded in place", abs, err))
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "upgrade %s\n", exe); err != nil {
		return 0, err
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Minute))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("the supervisor of %s did not confirm the upgrade: %w (see the mount's log)", abs, err)
	}
	var ms int64
	if _, err := fmt.Sscanf(line, "ok %d", &ms); err != nil {
		return 0, fmt.Errorf("upgrade of %s failed: %s", abs, strings.TrimSpace(strings.TrimPrefix(line, "error ")))
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// discardConn is the reply channel of a SIGHUP upgrade: nobody asked.
type discardConn struct{ net.Conn }

func (discardConn) Write(p []byte) (int, error) { return len(p), nil }
func (discardConn) Close() error                { return nil }

// childCode is the exit code of a server that exited with werr.
func childCode(werr error) int {
	var ee *exec.ExitError
	if errors.As(werr, &ee) && ee.ExitCode() > 0 {
		return ee.ExitCode()
	}
	return ExitError
}

// backoff is how long to wait before a restart, given the times of the
// restarts so far (the last one now).
func backoff(restarts []time.Time) time.Duration {
	recent := 0
	for _, t := range restarts {
		if time.Since(t) < restartWindow {
			recent++
		}
	}
	if recent <= maxRestarts {
		return 0
	}
	return min(time.Second<<min(recent-maxRestarts-1, 5), maxBackoff)
}
