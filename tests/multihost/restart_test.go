package multihost

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"shoal/internal/testutil"
	"shoal/tests/isolate"
)

// Bounds of the restart tests.
const (
	restartDowntime = 2 * time.Second  // how long a server stays down
	recoveryLimit   = 60 * time.Second // for the mounts to work again afterwards
	opLimit         = 90 * time.Second // no single operation may hang longer
)

// TestRestartPostgres restarts PostgreSQL (fast shutdown, then immediate:
// crash-like) under two busy mounts of a postgres+s3 volume.
func TestRestartPostgres(t *testing.T) {
	requireServers(t)
	pg := startPostgres(t, "127.0.0.1")
	v := isolate.FormatS3(t, isolate.PGSchemaURL(t, pg.url()), testutil.S3URL(t))
	busyRestart(t, v, func() {
		pg.restart(t, syscall.SIGINT, restartDowntime)
		pg.restart(t, syscall.SIGQUIT, restartDowntime)
	})
}

// TestRestartRedis restarts Redis (SHUTDOWN, then SIGKILL) under two busy
// mounts of a redis+s3 volume.
func TestRestartRedis(t *testing.T) {
	requireServers(t)
	r := startRedis(t, "127.0.0.1")
	v := isolate.FormatS3(t, isolate.RedisNamespaceURL(t, r.url()), testutil.S3URL(t))
	busyRestart(t, v, func() {
		r.restart(t, syscall.SIGTERM, restartDowntime)
		r.restart(t, syscall.SIGKILL, restartDowntime)
	})
}

// TestRestartMinIO restarts the S3 server (SIGTERM, then SIGKILL) under
// two busy mounts of a postgres+s3 volume.
func TestRestartMinIO(t *testing.T) {
	requireServers(t)
	m := startMinIO(t, "127.0.0.1")
	v := isolate.FormatS3(t, isolate.PGSchemaURL(t, testutil.PGURL(t)), m.url())
	busyRestart(t, v, func() {
		m.restart(t, syscall.SIGTERM, restartDowntime)
		m.restart(t, syscall.SIGKILL, restartDowntime)
	})
}

// busyRestart mounts v twice, runs a writer (create, write, fsync, close)
// on the first mount and a reader of what was acknowledged on the second,
// calls restart in the middle, and checks that
//   - no read ever returns wrong data (errors are allowed while a server
//     is down),
//   - no operation hangs beyond opLimit,
//   - both mounts work again after the restart, without a remount,
//   - every file whose fsync and close succeeded is intact on both mounts.
func busyRestart(t *testing.T, v *testutil.Volume, restart func()) {
	ms := mountN(t, v, 2)
	w := newWorkload(ms[0].Dir, ms[1].Dir)
	w.start(t)
	time.Sleep(2 * time.Second)
	restart()
	before := w.progress()
	took, err := eventually(recoveryLimit, func() error {
		if now := w.progress(); now.writes < before.writes+5 || now.reads < before.reads+5 {
			return fmt.Errorf("progress since the server came back: %d writes, %d reads",
				now.writes-before.writes, now.reads-before.reads)
		}
		return nil
	})
	w.stop(t)
	w.report(t)
	if err != nil {
		t.Fatalf("the mounts did not recover within %v of the restart: %v", recoveryLimit, err)
	}
	t.Logf("work resumed %v after the server was back", took.Round(time.Millisecond))
	for _, m := range ms {
		if m.Exited() {
			t.Fatalf("mount %s exited", m.Dir)
		}
	}
	w.verify(t, ms[0].Dir, ms[1].Dir)
}

// workload drives the writer and reader of busyRestart, which run in a
// helper process (helperWorkload): a test process that held files open on
// a mount could not start a server, since exec(2) closes those files and
// each close waits for the mount to flush to the server being started.
type workload struct {
	writeDir, readDir string
	cmd               *exec.Cmd
	stdin             io.WriteCloser
	done              chan struct{} // the report reader finished

	mu      sync.Mutex
	acked   []int          // files whose fsync and close succeeded
	errs    map[string]int // failed operations by error, for the log
	badData []string       // wrong data from a read: always a failure
	slowest time.Duration  // longest single operation
	writes  atomic.Int64   // acknowledged writes
	reads   atomic.Int64   // verified reads
}

type progress struct{ writes, reads int64 }

func newWorkload(writeDir, readDir string) *workload {
	return &workload{writeDir: writeDir, readDir: readDir, errs: map[string]int{}, done: make(chan struct{})}
}

func (w *workload) progress() progress { return progress{w.writes.Load(), w.reads.Load()} }

// start runs the helper and follows its reports.
func (w *workload) start(t *testing.T) {
	t.Helper()
	w.cmd = testutil.HelperCmd(t, nil, "workload", w.writeDir, w.readDir)
	var err error
	if w.stdin, err = w.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w.cmd.Stderr = os.Stderr
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.cmd.Process.Kill(); <-w.done; _ = w.cmd.Wait() })
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			w.record(sc.Text())
		}
	}()
}

// record takes one report line of the helper.
func (w *workload) record(line string) {
	kind, rest, _ := strings.Cut(line, " ")
	w.mu.Lock()
	defer w.mu.Unlock()
	switch kind {
	case "ack":
		i, _ := strconv.Atoi(rest)
		w.acked = append(w.acked, i)
		w.writes.Add(1)
	case "read":
		w.reads.Add(1)
	case "fail":
		w.errs[rest]++
	case "bad":
		w.badData = append(w.badData, rest)
	case "slowest":
		d, _ := time.ParseDuration(rest)
		w.slowest = d
	}
}

// stop ends the helper (end of input), failing t if it is stuck in an
// operation for longer than opLimit.
func (w *workload) stop(t *testing.T) {
	t.Helper()
	w.stdin.Close()
	select {
	case <-w.done:
		_ = w.cmd.Wait()
	case <-time.After(opLimit):
		_ = w.cmd.Process.Kill()
		t.Fatalf("an operation has been stuck for more than %v", opLimit)
	}
}

// report logs what happened and fails t for wrong data or a hang.
func (w *workload) report(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []string
	for e, n := range w.errs {
		errs = append(errs, fmt.Sprintf("%dx %s", n, e))
	}
	sort.Strings(errs)
	t.Logf("acknowledged writes %d, verified reads %d, slowest operation %v, failed operations: [%s]",
		w.writes.Load(), w.reads.Load(), w.slowest.Round(time.Millisecond), strings.Join(errs, "; "))
	if len(w.badData) > 0 {
		t.Errorf("reads returned wrong data %d times: %q", len(w.badData), w.badData[:min(10, len(w.badData))])
	}
	if w.slowest > opLimit {
		t.Errorf("an operation took %v (limit %v)", w.slowest, opLimit)
	}
}

// verify checks every acknowledged file in each of dirs (the written
// directory as each mount sees it), once the kernels' entry caches have
// expired.
func (w *workload) verify(t *testing.T, dirs ...string) {
	t.Helper()
	time.Sleep(time.Second + entrySlack)
	for _, dir := range dirs {
		bad := 0
		for _, i := range w.acked {
			got, err := os.ReadFile(workPath(dir, i))
			if err != nil || !bytes.Equal(got, workData(i)) {
				if bad++; bad <= 5 {
					t.Errorf("%s: acknowledged file f%05d lost or damaged: err %v, %s", dir, i, err, diffSummary(got, workData(i)))
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d acknowledged files lost or damaged", dir, bad, len(w.acked))
		}
	}
}
