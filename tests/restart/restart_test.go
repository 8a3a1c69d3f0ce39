package restart

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
	"shoal/tests/isolate"
)

// disruptions are the two ways a server is replaced.
var disruptions = []string{"kill9", "upgrade"}

// disrupt replaces m's server: SIGKILL (the supervisor starts a successor)
// or `shoal mount --upgrade`. It returns once a new server serves.
func disrupt(t *testing.T, m *testutil.Mount, how string) {
	t.Helper()
	old := m.WaitServerPID(t)
	if old == 0 {
		t.Fatalf("no server pid for %s", m.Dir)
	}
	switch how {
	case "kill9":
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			t.Fatalf("kill -9 %d: %v", old, err)
		}
	case "upgrade":
		res := testutil.RunTimeout(t, time.Minute, "mount", "--upgrade", m.Dir)
		if res.Code != 0 {
			t.Fatalf("shoal mount --upgrade: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if pid := m.ServerPID(t); pid != old && pid != 0 && syscall.Kill(pid, 0) == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no new server after %s of %d\n%s", how, old, m.LogText())
}

// prober writes and stats a file in the mount every few milliseconds and
// keeps the longest an operation took: the stall applications see.
type prober struct {
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	worst time.Duration
	err   error
}

func startProber(t *testing.T, m *testutil.Mount) *prober {
	p := &prober{stop: make(chan struct{}), done: make(chan struct{})}
	f, err := os.Create(m.Path("probe"))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		defer f.Close()
		buf := bytes.Repeat([]byte{7}, 4096)
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			start := time.Now()
			_, err := f.WriteAt(buf, int64(i%256)*4096)
			if err == nil {
				_, err = os.Stat(m.Path("probe"))
			}
			took := time.Since(start)
			p.mu.Lock()
			p.worst = max(p.worst, took)
			if err != nil && p.err == nil {
				p.err = err
			}
			p.mu.Unlock()
		}
	}()
	return p
}

// maxStall bounds the longest an operation may wait while the server is
// replaced: far above what it takes (about 100 ms, docs/admin.md), far
// below a hang.
const maxStall = 10 * time.Second

// finish stops the prober, logs the longest stall while what happened,
// and fails t on an error the prober saw or a stall over maxStall.
func (p *prober) finish(t *testing.T, what string) {
	t.Helper()
	close(p.stop)
	<-p.done
	if p.err != nil {
		t.Errorf("an application in the mount saw an error: %v", p.err)
	}
	t.Logf("%s: longest stall %v", what, p.worst)
	if p.worst > maxStall {
		t.Errorf("%s: an operation waited %v (more than %v)", what, p.worst, maxStall)
	}
}

// otherMount mounts m's volume a second time, at a new directory: reads
// there come from the engine and the store, not from the page cache of
// the mount that wrote.
func otherMount(t *testing.T, m *testutil.Mount) *testutil.Mount {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "other")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return m.Vol.MountAt(t, dir)
}

func mountSupervised(t *testing.T) *testutil.Mount {
	v := testutil.NewVolume(t)
	return v.Mount(t)
}

// TestFioVerifySurvives runs fio writing and then verifying a file while
// its server is replaced twice: fio must finish with every block verified,
// and verify them all again through a second mount of the volume (fio's
// own verify reads the page cache its writes filled, which a lost write
// does not empty).
func TestFioVerifySurvives(t *testing.T) {
	for _, how := range disruptions {
		t.Run(how, func(t *testing.T) {
			m := mountSupervised(t)
			p := startProber(t, m)
			job := func(path string) []string {
				return []string{"--name=verify", "--filename=" + path, "--size=192m", "--bs=64k",
					"--rw=randwrite", "--ioengine=psync", "--verify=crc32c", "--verify_fatal=1",
					"--randrepeat=1", "--randseed=1616"}
			}
			fio := exec.Command("fio", append(job(m.Path("fio.dat")), "--do_verify=1", "--end_fsync=1")...)
			var out bytes.Buffer
			fio.Stdout, fio.Stderr, fio.Dir = &out, &out, t.TempDir() // fio leaves a verify state file in its directory
			if err := fio.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- fio.Wait() }()
			for i := 0; i < 2; i++ {
				time.Sleep(400 * time.Millisecond)
				select {
				case err := <-exited:
					t.Fatalf("fio finished before disruption %d (%v): make the job longer\n%s", i+1, err, out.String())
				default:
				}
				disrupt(t, m, how)
			}
			if err := <-exited; err != nil {
				t.Fatalf("fio failed across %s: %v\n%s\n%s", how, err, out.String(), m.LogText())
			}
			if strings.Contains(out.String(), "verify:") && strings.Contains(out.String(), "bad") {
				t.Fatalf("fio verify errors:\n%s", out.String())
			}
			p.finish(t, how+" during fio")
			other := otherMount(t, m)
			again := exec.Command("fio", append(job(other.Path("fio.dat")), "--verify_only")...)
			again.Dir = t.TempDir()
			if b, err := again.CombinedOutput(); err != nil {
				t.Fatalf("fio --verify_only through a second mount after %s: %v\n%s", how, err, b)
			}
		})
	}
}

// TestGitCloneSurvives clones this repository into the mount while its
// server is replaced twice: the clone must succeed and pass git fsck.
func TestGitCloneSurvives(t *testing.T) {
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		t.Fatalf("the module root %s is not a git repository: %v", root, err)
	}
	for _, how := range disruptions {
		t.Run(how, func(t *testing.T) {
			m := mountSupervised(t)
			p := startProber(t, m)
			clone := exec.Command("git", "clone", "--no-local", "--no-checkout", root, m.Path("repo"))
			var out bytes.Buffer
			clone.Stdout, clone.Stderr = &out, &out
			if err := clone.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- clone.Wait() }()
			for !exists(m.Path("repo", ".git", "objects")) {
				time.Sleep(5 * time.Millisecond)
			}
			disrupt(t, m, how)
			if err := <-exited; err != nil {
				t.Fatalf("git clone failed across %s: %v\n%s", how, err, out.String())
			}
			checkout := exec.Command("git", "-C", m.Path("repo"), "checkout", "-q", "HEAD", "--", ".")
			done := make(chan []byte, 1)
			go func() { b, _ := checkout.CombinedOutput(); done <- b }()
			time.Sleep(150 * time.Millisecond)
			disrupt(t, m, how)
			if b := <-done; checkout.ProcessState == nil || !checkout.ProcessState.Success() {
				t.Fatalf("git checkout failed across %s: %s", how, b)
			}
			p.finish(t, how+" during git clone and checkout")
			// Checked through a second mount, whose reads are not
			// served from the page cache the clone filled.
			other := otherMount(t, m)
			for _, args := range [][]string{{"fsck", "--full", "--strict"}, {"status", "--porcelain"}} {
				cmd := exec.Command("git", append([]string{"-C", other.Path("repo")}, args...)...)
				cmd.Env = append(os.Environ(), "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*")
				b, err := cmd.CombinedOutput()
				if err != nil || (args[0] == "status" && len(bytes.TrimSpace(b)) > 0) {
					t.Fatalf("git %s through a second mount after %s: %v\n%s", args[0], how, err, b)
				}
			}
		})
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestLockAndUnlinkedFileSurvive: a process holds a flock and an unlinked
// file with unflushed writes while the server is killed and then
// upgraded. After each, another mount of the volume (a separate process,
// as another machine would be) still cannot take the lock and sees the
// same sessions (the server resumed its own, none was begun or
// reclaimed), and the holder reads back every byte through its descriptor
// and goes on writing. On SQLite and on PostgreSQL with S3.
func TestLockAndUnlinkedFileSurvive(t *testing.T) {
	volumes := map[string]func(t *testing.T) *testutil.Volume{
		"sqlite": func(t *testing.T) *testutil.Volume { return testutil.NewVolume(t) },
		"postgres+s3": func(t *testing.T) *testutil.Volume {
			return isolate.FormatS3(t, isolate.PGSchemaURL(t, testutil.PGURL(t)), testutil.S3URL(t))
		},
	}
	for _, name := range []string{"sqlite", "postgres+s3"} {
		t.Run(name, func(t *testing.T) { lockAndUnlinked(t, volumes[name](t)) })
	}
}

func lockAndUnlinked(t *testing.T, v *testutil.Volume) {
	m := v.Mount(t)
	otherDir := filepath.Join(t.TempDir(), "other")
	if err := os.Mkdir(otherDir, 0o755); err != nil {
		t.Fatal(err)
	}
	other := v.MountAt(t, otherDir)
	cmd := testutil.HelperCmd(t, nil, "holder", m.Dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stdout)
	expect := func(want string) {
		t.Helper()
		if !lines.Scan() || lines.Text() != want {
			t.Fatalf("holder said %q, want %q\n%s", lines.Text(), want, m.LogText())
		}
	}
	expect("ready")
	sessions := sessionIDs(t, v)
	for round, how := range disruptions {
		disrupt(t, m, how)
		if err := tryLock(other.Path("locked")); !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Fatalf("after %s another mount could take the holder's flock: %v", how, err)
		}
		if now := sessionIDs(t, v); now != sessions {
			t.Fatalf("after %s the volume's sessions are %s, were %s: the server did not carry on its own", how, now, sessions)
		}
		fmt.Fprintf(stdin, "check %d\n", round+1)
		expect(fmt.Sprintf("ok %d", round+1))
	}
	// A process waiting for the lock inside the server when it dies: the
	// kernel resends its request to the successor, where it goes on
	// waiting, and gets the lock once the holder lets go.
	waiter := exec.Command("flock", "-x", m.Path("locked"), "-c", "true")
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- waiter.Wait() }()
	time.Sleep(300 * time.Millisecond)
	disrupt(t, m, "kill9")
	select {
	case err := <-waited:
		t.Fatalf("the waiter got the lock while the holder still held it: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("the waiter's flock failed: %v", err)
		}
	case <-time.After(20 * time.Second):
		_ = waiter.Process.Kill()
		t.Fatalf("the process waiting for the lock when the server died never got it (its request was lost)")
	}
	// The holder's exit released its lock, in the session the lock was
	// taken in: the lock is free at once (a close's release reaches the
	// server a moment after close returns), not left to a dead session's
	// reclaim a minute later.
	deadline := time.Now().Add(5 * time.Second)
	for err := tryLock(other.Path("locked")); err != nil; err = tryLock(other.Path("locked")) {
		if time.Now().After(deadline) {
			t.Fatalf("the holder and the waiter exited but the flock is still held: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tryLock takes and drops a flock on path without waiting.
func tryLock(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// sessionIDs lists the volume's session ids from `shoal status --json`.
func sessionIDs(t *testing.T, v *testutil.Volume) string {
	t.Helper()
	res := testutil.MustRun(t, "status", "--json", v.MetaURL)
	var st struct {
		Sessions []map[string]any `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, res.Stdout)
	}
	var ids []string
	for _, s := range st.Sessions {
		for k, v := range s {
			if strings.EqualFold(k, "id") {
				ids = append(ids, fmt.Sprint(v))
			}
		}
	}
	sort.Strings(ids)
	return strings.Join(ids, ",")
}

// helperHolder takes a flock on DIR/locked, writes 1 MiB to DIR/scratch,
// unlinks it and keeps it open; on each "check N" it reads back the N MiB
// it wrote through its descriptor, writes one more, and says "ok N".
func helperHolder(args []string) int {
	dir := args[0]
	lf, err := os.Create(filepath.Join(dir, "locked"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer lf.Close() // keeps the descriptor (and the lock) from the collector
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	f, err := os.OpenFile(filepath.Join(dir, "scratch"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	chunk := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, 1<<20) }
	if _, err := f.Write(chunk(0)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := os.Remove(f.Name()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for n := 1; in.Scan(); n++ {
		// Drop the file's pages first: the read must come from the
		// server (its replay of the journal), not the page cache.
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			fmt.Printf("fadvise: %v\n", err)
			return 1
		}
		got := make([]byte, n<<20)
		if _, err := f.ReadAt(got, 0); err != nil {
			fmt.Printf("read back: %v\n", err)
			return 1
		}
		for i := 0; i < n; i++ {
			if !bytes.Equal(got[i<<20:(i+1)<<20], chunk(i)) {
				fmt.Printf("MiB %d read back wrong after the server was replaced\n", i)
				return 1
			}
		}
		if _, err := f.WriteAt(chunk(n), int64(n)<<20); err != nil {
			fmt.Printf("write: %v\n", err)
			return 1
		}
		if st, err := f.Stat(); err != nil || st.Size() != int64(n+1)<<20 {
			fmt.Printf("fstat: %v %v\n", st, err)
			return 1
		}
		fmt.Printf("ok %d\n", n)
	}
	return 0
}

// TestWholeMountDeathKeepsAcknowledgedWrites: the supervisor and the
// server are killed together (systemd's Restart=, the OOM killer) right
// after writes were acknowledged but before any was committed: the next
// mount of the volume at the same place applies them from the journal.
// Read back through the new mount, which has no page cache of the file.
func TestWholeMountDeathKeepsAcknowledgedWrites(t *testing.T) {
	v := testutil.NewVolume(t)
	m := v.Mount(t)
	f, err := os.Create(m.Path("acked"))
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("acknowledged "), 80<<10) // ~1 MiB, well under the idle commit
	if _, err := f.Write(want); err != nil {
		t.Fatal(err)
	}
	server := m.WaitServerPID(t)
	_ = syscall.Kill(m.PID(), syscall.SIGKILL) // first: it must not start a successor
	_ = syscall.Kill(server, syscall.SIGKILL)
	m.Kill9(t)
	_ = f.Close()
	again := v.MountAt(t, m.Dir)
	got, err := os.ReadFile(again.Path("acked"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("after the whole mount died the file holds %d bytes (%.20q...), want the %d acknowledged\n%s", len(got), got, len(want), again.LogText())
	}
}

// TestSuccessorHoldsOneConnection: a server started by the supervisor
// holds the kernel connection once (fd 4 for a successor), not also a
// stray inherited copy of the descriptor the supervisor keeps.
func TestSuccessorHoldsOneConnection(t *testing.T) {
	m := mountSupervised(t)
	disrupt(t, m, "kill9")
	fds, err := testutil.OpenFDs(m.WaitServerPID(t))
	if err != nil {
		t.Fatal(err)
	}
	var fuse []int
	for fd, target := range fds {
		if target == "/dev/fuse" {
			fuse = append(fuse, fd)
		}
	}
	if len(fuse) != 1 {
		t.Fatalf("the successor holds /dev/fuse as fds %v, want one", fuse)
	}
}

// TestUpgradeRunsNothingTwice: processes create and remove directories
// (each mkdir of a new name, each rmdir of one that exists) while the
// server is upgraded ten times. A reply lost in a handover would make the
// kernel resend an operation the new server runs again: EEXIST or ENOENT.
// The old server must also have known that every reply was written (it
// says so in the log when it cannot).
func TestUpgradeRunsNothingTwice(t *testing.T) {
	m := mountSupervised(t)
	stop := make(chan struct{})
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				dir := m.Path(fmt.Sprintf("d%d-%d", w, i))
				if err := os.Mkdir(dir, 0o755); err != nil {
					errs <- err
					return
				}
				if err := os.Remove(dir); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; i < 10; i++ {
		time.Sleep(100 * time.Millisecond)
		disrupt(t, m, "upgrade")
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("an operation ran twice across an upgrade: %v", err)
	}
	if strings.Contains(m.LogText(), "cannot tell that every reply") {
		t.Errorf("a server handed over without knowing its replies were written:\n%s", m.LogText())
	}
}
