package cli

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"shoal/internal/rundir"
)

// checkMountpoint says what is wrong with mp as a place to mount, if
// anything, and returns its absolute path.
func checkMountpoint(mp string) (string, error) {
	abs, err := filepath.Abs(mp)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return "", withCode(ExitNotFound, fmt.Errorf("mountpoint %s does not exist: create it with 'mkdir -p %s'", abs, abs))
	}
	if err != nil {
		return "", fmt.Errorf("mountpoint %s: %w (if a previous mount died, clear it with 'shoal umount %s')", abs, err, abs)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("mountpoint %s is not a directory", abs)
	}
	if src, fstype, ok := mountedAt(abs); ok {
		return "", fmt.Errorf("%s is already mounted (%s, type %s): unmount it first with 'shoal umount %s'", abs, src, fstype, abs)
	}
	return abs, nil
}

// checkFUSE verifies that /dev/fuse can be opened.
func checkFUSE() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("cannot open /dev/fuse: %w (install the fuse3 package, load the fuse kernel module with 'modprobe fuse', and mount as root)", err)
	}
	return f.Close()
}

// mountedAt reports whether a file system is mounted at mp, with its
// source and type, from /proc/self/mountinfo.
func mountedAt(mp string) (source, fstype string, ok bool) {
	e, ok := mountInfo(mp)
	return e.source, e.fstype, ok
}

// mountMinor returns the minor device number of the file system mounted at
// mp (a FUSE connection's number in fusectl), without touching it.
func mountMinor(mp string) (uint32, bool) {
	e, ok := mountInfo(mp)
	_, minor, found := strings.Cut(e.dev, ":")
	n, err := strconv.ParseUint(minor, 10, 32)
	return uint32(n), ok && found && err == nil
}

// mountOwner returns the user a FUSE file system mounted at mp belongs to
// (its user_id= option: the uid of the process that mounted it), or -1
// for a mount without one; ok is false when nothing is mounted there.
func mountOwner(mp string) (uid int, ok bool) {
	e, ok := mountInfo(mp)
	for _, opt := range strings.Split(e.options, ",") {
		if v, found := strings.CutPrefix(opt, "user_id="); found {
			if n, err := strconv.Atoi(v); err == nil {
				return n, ok
			}
		}
	}
	return -1, ok
}

// mountEntry is one line of /proc/self/mountinfo: source, type, device
// ("major:minor") and the file system's own (super block) options.
type mountEntry struct{ source, fstype, dev, options string }

// mountInfo returns the last file system mounted at mp, from
// /proc/self/mountinfo.
func mountInfo(mp string) (e mountEntry, ok bool) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return e, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || unescapeMount(fields[4]) != mp {
			continue
		}
		for i, fl := range fields {
			if fl == "-" && i+2 < len(fields) {
				e, ok = mountEntry{source: fields[i+2], fstype: fields[i+1], dev: fields[2]}, true
				if i+3 < len(fields) {
					e.options = fields[i+3]
				}
			}
		}
	}
	return e, ok
}

// unescapeMount decodes the octal escapes (\040 for space) of mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// pidFile is where the server of the mount at mp records its pid, so
// umount can wait for it (internal/rundir says where and why there).
func pidFile(mp string) string { return rundir.Path(mp, ".pid") }
