package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// helperOp runs one file-system operation in a subprocess (usually as
// another user) and prints OK or the errno's name: op PATH [ARG].
func helperOp(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: op NAME PATH [ARG]")
		return 2
	}
	err := runOp(args[0], args[1], args[2:])
	var errno syscall.Errno
	switch {
	case err == nil:
		fmt.Println("OK")
	case errors.As(err, &errno):
		fmt.Println(unix.ErrnoName(errno))
	default:
		fmt.Println("ERROR", err)
	}
	return 0
}

func runOp(op, path string, rest []string) error {
	switch op {
	case "read":
		_, err := os.ReadFile(path)
		return err
	case "write":
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		if _, err := f.Write([]byte("x")); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	case "write-fstat":
		// A write by this (unprivileged) user must have cleared setuid,
		// and setgid with group exec, by the time write(2) returns.
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := f.Write([]byte("x")); err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			return err
		}
		if st.Mode&unix.S_ISUID != 0 || st.Mode&(unix.S_ISGID|unix.S_IXGRP) == unix.S_ISGID|unix.S_IXGRP {
			return fmt.Errorf("mode %o after the write, before close", st.Mode&0o7777)
		}
		return f.Close()
	case "open-trunc":
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return err
		}
		return f.Close()
	case "create":
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	case "mkdir":
		return unix.Mkdir(path, 0o755)
	case "unlink":
		return unix.Unlink(path)
	case "rmdir":
		return unix.Rmdir(path)
	case "rename":
		return unix.Rename(path, rest[0])
	case "chmod":
		return unix.Chmod(path, 0o777)
	case "chown":
		return unix.Chown(path, 0, 0)
	case "utime-now":
		return unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}, 0)
	case "utime-set":
		return unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{{Sec: 1}, {Sec: 1}}, 0)
	case "list":
		_, err := os.ReadDir(path)
		return err
	case "stat":
		var st unix.Stat_t
		return unix.Stat(path, &st)
	case "truncate":
		return unix.Truncate(path, 0)
	case "setxattr":
		return unix.Setxattr(path, "user.x", []byte("v"), 0)
	case "getxattr":
		_, err := unix.Getxattr(path, "user.x", make([]byte, 64))
		return err
	}
	return fmt.Errorf("unknown op %q", op)
}

// helperWriter writes SIZE bytes of a pattern derived from SEED to PATH in
// small pieces, re-reading everything written so far after each piece, and
// finally checks the whole file: writer PATH SIZE SEED.
func helperWriter(args []string) int {
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: writer PATH SIZE SEED")
		return 2
	}
	size, _ := strconv.Atoi(args[1])
	seed, _ := strconv.ParseUint(args[2], 10, 64)
	if err := writeAndVerify(args[0], randBytes(seed, size), 64<<10); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// writeAndVerify writes want to path in pieces of step bytes, checking the
// written prefix after each piece, then checks the file after close.
func writeAndVerify(path string, want []byte, step int) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, len(want))
	for off := 0; off < len(want); off += step {
		end := min(off+step, len(want))
		if _, err := f.WriteAt(want[off:end], int64(off)); err != nil {
			return fmt.Errorf("%s: write at %d: %w", path, off, err)
		}
		// Re-read a window ending at what was just written.
		from := max(0, end-4*step)
		if _, err := f.ReadAt(buf[from:end], int64(from)); err != nil {
			return fmt.Errorf("%s: read [%d,%d): %w", path, from, end, err)
		}
		if !bytes.Equal(buf[from:end], want[from:end]) {
			return fmt.Errorf("%s: read-while-writing mismatch in [%d,%d): %s", path, from, end, diffSummary(buf[from:end], want[from:end]))
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: close: %w", path, err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%s: final content: %s%s", path, diffSummary(got, want), laterLook(path, want))
	}
	return nil
}

// laterLook describes path's size and content again after the kernel's
// attribute cache (1 s by default) has expired: it tells a stale cached
// size from lost data.
func laterLook(path string, want []byte) string {
	var st unix.Stat_t
	errNow := unix.Stat(path, &st)
	sizeNow := st.Size
	time.Sleep(1500 * time.Millisecond)
	got, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("; stat size right after: %d (%v); re-read after 1.5 s: %v", sizeNow, errNow, err)
	}
	verdict := "same"
	if bytes.Equal(got, want) {
		verdict = "now correct (a stale size or page cache, not lost data)"
	} else {
		verdict = diffSummary(got, want)
	}
	_ = unix.Stat(path, &st)
	return fmt.Sprintf("; stat size right after: %d; after 1.5 s: size %d, re-read: %s", sizeNow, st.Size, verdict)
}

// helperHold writes TEXT to PATH and keeps the file open, without closing
// or syncing it, until its stdin closes: hold PATH TEXT. It prints "held"
// once written. A process that never forks keeps its writes unflushed
// (a fork+exec closes inherited descriptors, which flushes them).
func helperHold(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: hold PATH TEXT")
		return 2
	}
	f, err := os.OpenFile(args[0], os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		_, err = f.Write([]byte(args[1]))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("held")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}
