package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
)

// TestConcurrentWriters runs goroutines and separate processes at once,
// each writing its own file while re-reading what it wrote, while other
// goroutines read the finished files of earlier rounds.
func TestConcurrentWriters(t *testing.T) {
	m := mountFresh(t)
	const (
		goroutines = 4
		processes  = 3
		size       = 6<<20 + 4097
	)
	ok(t, os.Mkdir(m.Path("g"), 0o755), "mkdir")
	ok(t, os.Mkdir(m.Path("p"), 0o755), "mkdir")
	// Files the readers check while the writers run.
	for i := 0; i < 2; i++ {
		writeFile(t, m.Path(fmt.Sprintf("stable%d", i)), randBytes(uint64(900+i), size), 0o644)
	}

	var procs []*exec.Cmd
	for i := 0; i < processes; i++ {
		cmd := testutil.HelperCmd(t, nil, "writer", m.Path("p", strconv.Itoa(i)), strconv.Itoa(size), strconv.Itoa(100+i))
		cmd.Stderr = os.Stderr
		ok(t, cmd.Start(), "start writer process")
		procs = append(procs, cmd)
	}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines+2)
	for i := 0; i < goroutines; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- writeAndVerify(m.Path("g", strconv.Itoa(i)), randBytes(uint64(200+i), size), 32<<10)
		}()
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for i := 0; i < 2; i++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			errs <- rereadUntil(m.Path(fmt.Sprintf("stable%d", i)), randBytes(uint64(900+i), size), stop)
		}()
	}
	for i, cmd := range procs {
		if err := cmd.Wait(); err != nil {
			t.Errorf("writer process %d: %v", i, err)
		}
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	m = m.Remount(t)
	for i := 0; i < processes; i++ {
		wantContent(t, m.Path("p", strconv.Itoa(i)), randBytes(uint64(100+i), size))
	}
	for i := 0; i < goroutines; i++ {
		wantContent(t, m.Path("g", strconv.Itoa(i)), randBytes(uint64(200+i), size))
	}
}

// rereadUntil reads path in full again and again until stop closes, and
// reports the first read that differs from want.
func rereadUntil(path string, want []byte, stop <-chan struct{}) error {
	for n := 0; ; n++ {
		select {
		case <-stop:
			if n == 0 {
				return fmt.Errorf("%s: never read", path)
			}
			return nil
		default:
		}
		got, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if string(got) != string(want) {
			return fmt.Errorf("%s: read %d while writers ran: %s", path, n, diffSummary(got, want))
		}
	}
}

// TestConcurrentCreates creates and removes files in one directory from
// many goroutines; the directory must end with exactly the survivors.
func TestConcurrentCreates(t *testing.T) {
	m := mountFresh(t)
	dir := m.Path("d")
	ok(t, os.Mkdir(dir, 0o755), "mkdir")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				p := fmt.Sprintf("%s/w%d-%d", dir, w, i)
				if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
					errs <- err
					return
				}
				if i%2 == 1 {
					if err := os.Remove(p); err != nil {
						errs <- err
						return
					}
				}
			}
			errs <- nil
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	want := map[string]bool{}
	for w := 0; w < 8; w++ {
		for i := 0; i < 200; i += 2 {
			want[fmt.Sprintf("w%d-%d", w, i)] = false
		}
	}
	checkListing(t, dir, want)
}

// TestSingleThreadedMount runs the mount process with GOMAXPROCS=1, where
// a FUSE server that blocks a request on another request deadlocks (as
// go-fuse documents), and drives it with parallel writers, readers,
// listings and an mmap.
func TestSingleThreadedMount(t *testing.T) {
	t.Setenv("GOMAXPROCS", "1") // inherited by the mount process
	m := mountFresh(t)
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", m.WaitServerPID(t)))
	ok(t, err, "read mount environ")
	if !strings.Contains(string(env), "\x00GOMAXPROCS=1\x00") && !strings.HasPrefix(string(env), "GOMAXPROCS=1\x00") {
		t.Fatal("mount process does not run with GOMAXPROCS=1")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- writeAndVerify(m.Path(fmt.Sprintf("f%d", i)), randBytes(uint64(300+i), 2<<20+i), 16<<10)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for k := 0; k < 50; k++ {
			if _, err := os.ReadDir(m.Dir); err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("operations did not finish within 2 minutes (deadlock?)")
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	testMmapRoundTrip(t, m.Path("mm"))
}

// TestListingDuringWrite lists a directory over and over while a file in
// it is being written: the attributes a listing carries (READDIRPLUS) must
// not hand the kernel an older size, or the writer's next stat or read
// sees the file shrunk.
func TestListingDuringWrite(t *testing.T) {
	m := mountFresh(t)
	testAttrsDuringWrite(t, m, func() error {
		_, err := os.ReadDir(m.Dir)
		return err
	})
}

// TestStatDuringWrite is TestListingDuringWrite with another process-like
// goroutine stat()ing the files being written (GETATTR and LOOKUP).
func TestStatDuringWrite(t *testing.T) {
	m := mountFresh(t)
	testAttrsDuringWrite(t, m, func() error {
		for round := 0; round < 5; round++ {
			var st unix.Stat_t
			_ = unix.Stat(m.Path(fmt.Sprintf("w%d", round)), &st)
		}
		return nil
	})
}

// testAttrsDuringWrite writes files w0..w4 in 16 KiB pieces while peek runs
// in a loop in another goroutine, and checks the size after every write
// and after close.
func testAttrsDuringWrite(t *testing.T, m *testutil.Mount, peek func() error) {
	stop := make(chan struct{})
	peeked := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				peeked <- nil
				return
			default:
			}
			if err := peek(); err != nil {
				peeked <- err
				return
			}
		}
	}()
	defer func() {
		close(stop)
		if err := <-peeked; err != nil {
			t.Error(err)
		}
	}()
	for round := 0; round < 5; round++ {
		p := m.Path(fmt.Sprintf("w%d", round))
		f, err := os.Create(p)
		ok(t, err, "create")
		piece := randBytes(uint64(round), 16<<10)
		for i := 0; i < 128; i++ {
			_, err := f.Write(piece)
			ok(t, err, "write")
			if st := fstat(t, f); st.Size != int64(i+1)*int64(len(piece)) {
				f.Close()
				t.Fatalf("round %d: after %d writes fstat size %d, want %d", round, i+1, st.Size, (i+1)*len(piece))
			}
		}
		ok(t, f.Close(), "close")
		if st := stat(t, p); st.Size != 128*16<<10 {
			t.Fatalf("round %d: size after close %d, want %d", round, st.Size, 128*16<<10)
		}
	}
}

// TestAppendDuringListing appends to files while a listing loop runs: an
// O_APPEND write lands at the kernel's idea of the size, so a stale size
// from a listing would make appends overwrite earlier data.
func TestAppendDuringListing(t *testing.T) {
	m := mountFresh(t)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				_, _ = os.ReadDir(m.Dir)
			}
		}
	}()
	for round := 0; round < 5; round++ {
		p := m.Path(fmt.Sprintf("a%d", round))
		var want []byte
		for i := 0; i < 64; i++ {
			piece := randBytes(uint64(round*1000+i), 8<<10)
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			ok(t, err, "open O_APPEND")
			_, err = f.Write(piece)
			ok(t, err, "append")
			ok(t, f.Close(), "close")
			want = append(want, piece...)
		}
		got := readFile(t, p)
		if string(got) != string(want) {
			t.Fatalf("round %d: appended file: %s%s", round, diffSummary(got, want), laterLook(p, want))
		}
	}
}
