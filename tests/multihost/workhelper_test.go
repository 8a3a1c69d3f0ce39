package multihost

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// workPath is the path of workload file i under dir.
func workPath(dir string, i int) string { return filepath.Join(dir, fmt.Sprintf("f%05d", i)) }

// workData is the content of workload file i: 16 KiB to about 1 MiB.
func workData(i int) []byte { return randBytes(uint64(i)+1000, 16<<10+(i*37<<10)%(1<<20)) }

// helperWorkload writes files (create, write, fsync, close) under WRITEDIR
// and reads back, under READDIR, files already acknowledged, until its
// input ends: workload WRITEDIR READDIR. It reports on stdout, one line
// each: "ack I" (file I's fsync and close succeeded), "read" (a read
// returned the right data), "fail OP ERR", "bad DETAILS" (a read returned
// wrong data), and at the end "slowest DURATION".
func helperWorkload(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: workload WRITEDIR READDIR")
		return 2
	}
	h := &workHelper{out: bufio.NewWriter(os.Stdout)}
	quit := make(chan struct{})
	go func() { _, _ = bufio.NewReader(os.Stdin).ReadString(0); close(quit) }()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); h.writeLoop(args[0], quit) }()
	go func() { defer wg.Done(); h.readLoop(args[1], quit) }()
	wg.Wait()
	h.report("slowest %v", h.slowest)
	return 0
}

type workHelper struct {
	mu      sync.Mutex
	out     *bufio.Writer
	acked   []int
	slowest time.Duration
}

// report writes one line and flushes it.
func (h *workHelper) report(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintf(h.out, format+"\n", args...)
	h.out.Flush()
}

func (h *workHelper) timed(op func() error) error {
	start := time.Now()
	err := op()
	h.mu.Lock()
	h.slowest = max(h.slowest, time.Since(start))
	h.mu.Unlock()
	return err
}

func (h *workHelper) writeLoop(dir string, quit chan struct{}) {
	for i := 0; !closed(quit); i++ {
		if err := h.timed(func() error { return writeFileErr(workPath(dir, i), workData(i), true) }); err != nil {
			h.report("fail write: %s", errName(err))
			time.Sleep(100 * time.Millisecond)
			continue
		}
		h.mu.Lock()
		h.acked = append(h.acked, i)
		h.mu.Unlock()
		h.report("ack %d", i)
	}
}

func (h *workHelper) readLoop(dir string, quit chan struct{}) {
	r := rand.New(rand.NewPCG(1, 2))
	for !closed(quit) {
		h.mu.Lock()
		i := -1
		if len(h.acked) > 0 {
			i = h.acked[r.IntN(len(h.acked))]
		}
		h.mu.Unlock()
		if i < 0 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		var got []byte
		err := h.timed(func() error { var err error; got, err = os.ReadFile(workPath(dir, i)); return err })
		switch {
		case err != nil:
			h.report("fail read: %s", errName(err))
			time.Sleep(100 * time.Millisecond)
		case !bytes.Equal(got, workData(i)):
			h.report("bad f%05d: %s", i, diffSummary(got, workData(i)))
		default:
			h.report("read")
		}
	}
}

// errName is an errno's text, or the error's.
func errName(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
