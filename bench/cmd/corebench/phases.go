package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// emit prints one result line.
func emit(metric string, v float64) { fmt.Printf("%s %.6f\n", metric, v) }

// names returns the N file names used in a directory.
func names(dir string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = filepath.Join(dir, fmt.Sprintf("f%07d", i))
	}
	return out
}

// timed runs fn over every name and returns the elapsed seconds.
func timed(ns []string, fn func(string) error) (float64, error) {
	start := time.Now()
	for _, n := range ns {
		if err := fn(n); err != nil {
			return 0, err
		}
	}
	return time.Since(start).Seconds(), nil
}

func create(p string) error {
	fd, err := syscall.Open(p, syscall.O_CREAT|syscall.O_EXCL|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", p, err)
	}
	return syscall.Close(fd)
}

func stat(p string) error {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return fmt.Errorf("stat %s: %w", p, err)
	}
	return nil
}

func unlink(p string) error {
	if err := syscall.Unlink(p); err != nil {
		return fmt.Errorf("unlink %s: %w", p, err)
	}
	return nil
}

// meta creates, stats and unlinks n empty files in a new directory dir.
func meta(dir string, n int) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	ns := names(dir, n)
	for _, ph := range []struct {
		metric string
		fn     func(string) error
	}{{"create", create}, {"stat", stat}, {"unlink", unlink}} {
		secs, err := timed(ns, ph.fn)
		if err != nil {
			return err
		}
		emit(ph.metric, secs)
	}
	return os.Remove(dir)
}

// hugedir creates n files in a new directory dir, lists it, and stats
// every listed entry; the files stay (the caller removes them untimed).
func hugedir(dir string, n int) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	secs, err := timed(names(dir, n), create)
	if err != nil {
		return err
	}
	emit("hd_create", secs)
	start := time.Now()
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	listed, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	emit("hd_readdir", time.Since(start).Seconds())
	if len(listed) != n {
		return fmt.Errorf("readdir %s: %d entries, want %d", dir, len(listed), n)
	}
	for i := range listed {
		listed[i] = filepath.Join(dir, listed[i])
	}
	if secs, err = timed(listed, stat); err != nil {
		return err
	}
	emit("hd_stat", secs)
	return nil
}

// write writes mib MiB of kind (pattern, random, text: see fill)
// sequentially to a new file and fsyncs it.
func write(path string, mib int, kind string) error {
	pool, err := fill(kind)
	if err != nil {
		return err
	}
	start := time.Now()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	for i := 0; i < mib; i++ {
		buf := pool[i%len(pool)]
		buf[0], buf[1] = byte(i), byte(i>>8)
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	emit("write", float64(mib)/time.Since(start).Seconds())
	return nil
}

// read reads path to the end in 1 MiB pieces.
func read(path string) error {
	buf := make([]byte, 1<<20)
	start := time.Now()
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var total int64
	for {
		n, err := f.Read(buf)
		total += int64(n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	emit("read", float64(total)/(1<<20)/time.Since(start).Seconds())
	return nil
}

// rss prints the peak resident set size (VmHWM) of process pid in KiB.
func rss(pid int) error {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kib, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				return err
			}
			emit("rss_kib", float64(kib))
			return nil
		}
	}
	return fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// fill returns the 1 MiB buffers a write cycles through, made before the
// clock starts: "pattern" (the default: one buffer of a short repeating
// pattern, what the core benchmark always wrote), "random" (64 distinct
// MiB of random bytes: incompressible, even across a 4 MiB block), or
// "text" (64 MiB of log-like lines: compresses about as well as logs and
// source trees do).
func fill(kind string) ([][]byte, error) {
	switch kind {
	case "", "pattern":
		buf := make([]byte, 1<<20)
		for i := range buf {
			buf[i] = byte(i*7 + i>>11)
		}
		return [][]byte{buf}, nil
	case "random":
		r := rand.NewChaCha8([32]byte{7})
		pool := make([][]byte, 64)
		for i := range pool {
			pool[i] = make([]byte, 1<<20)
			_, _ = r.Read(pool[i])
		}
		return pool, nil
	case "text":
		var b bytes.Buffer
		for i := 0; b.Len() < 64<<20; i++ {
			fmt.Fprintf(&b, "2026-11-25T03:%02d:%02d.%06dZ host%d GET /srv/www/site%d/page%d.html status=%d bytes=%d\n",
				i/60%60, i%60, i*7919%1000000, i%17, i%13, i%997, 200+i%7*50, i*31%65536)
		}
		pool := make([][]byte, 64)
		for i := range pool {
			pool[i] = b.Bytes()[i<<20 : (i+1)<<20]
		}
		return pool, nil
	}
	return nil, fmt.Errorf("unknown data kind %q (pattern, random, text)", kind)
}
