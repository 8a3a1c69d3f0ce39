package testutil

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// live holds the mounts started and not yet stopped by this process.
var live struct {
	sync.Mutex
	mounts map[*Mount]bool
}

func register(m *Mount) {
	live.Lock()
	defer live.Unlock()
	if live.mounts == nil {
		live.mounts = map[*Mount]bool{}
	}
	live.mounts[m] = true
}

func unregister(m *Mount) {
	live.Lock()
	defer live.Unlock()
	delete(live.mounts, m)
}

// MountInfo is one line of /proc/self/mountinfo, reduced to what the
// harness needs.
type MountInfo struct {
	Point  string // mount point, unescaped
	FSType string // e.g. "fuse.shoal"
	Source string // the mount source
}

// Mounts parses /proc/self/mountinfo.
func Mounts() ([]MountInfo, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []MountInfo
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if mi, ok := parseMountInfo(sc.Text()); ok {
			out = append(out, mi)
		}
	}
	return out, sc.Err()
}

// parseMountInfo reads "id parent maj:min root point opts [tags] - type source superopts".
func parseMountInfo(line string) (MountInfo, bool) {
	fields := strings.Fields(line)
	sep := -1
	for i, f := range fields {
		if f == "-" {
			sep = i
			break
		}
	}
	if len(fields) < 5 || sep < 0 || sep+2 >= len(fields) {
		return MountInfo{}, false
	}
	return MountInfo{Point: unescapeOctal(fields[4]), FSType: fields[sep+1], Source: unescapeOctal(fields[sep+2])}, true
}

// unescapeOctal undoes the kernel's \ooo escaping of spaces and the like.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// isFUSEMount reports whether dir is the mount point of a FUSE mount.
func isFUSEMount(dir string) bool {
	ms, err := Mounts()
	if err != nil {
		return false
	}
	for _, mi := range ms {
		if mi.Point == dir && strings.HasPrefix(mi.FSType, "fuse") {
			return true
		}
	}
	return false
}

// IsMounted reports whether dir is the mount point of a FUSE mount.
func IsMounted(dir string) bool { return isFUSEMount(dir) }

// mountsUnder returns the mount points at or below dir.
func mountsUnder(dir string) []string {
	ms, _ := Mounts()
	var out []string
	for _, mi := range ms {
		if mi.Point == dir || strings.HasPrefix(mi.Point, dir+"/") {
			out = append(out, mi.Point)
		}
	}
	return out
}

// LeftoverMounts returns the mounts this process started that are still
// mounted or running, plus any FUSE mount under its scratch directory.
func LeftoverMounts() []string {
	seen := map[string]bool{}
	live.Lock()
	for m := range live.mounts {
		seen[fmt.Sprintf("%s (pid %d)", m.Dir, m.PID())] = true
	}
	live.Unlock()
	if scratch.dir != "" {
		for _, p := range mountsUnder(scratch.dir) {
			seen[p] = true
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// OpenFDs returns the targets of process pid's open file descriptors,
// keyed by fd number (pid 0 means this process).
func OpenFDs(pid int) (map[int]string, error) {
	dir := "/proc/self/fd"
	if pid != 0 {
		dir = fmt.Sprintf("/proc/%d/fd", pid)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make(map[int]string, len(ents))
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed meanwhile (e.g. the ReadDir fd itself)
		}
		out[n] = target
	}
	return out, nil
}

// leakedFDs returns this process's fds that point into the scratch dir
// (files on test mounts or volumes) and were not open in before.
func leakedFDs(before map[int]string) []string {
	now, err := OpenFDs(0)
	if err != nil || scratch.dir == "" {
		return nil
	}
	var out []string
	for fd, target := range now {
		if before[fd] == target || !strings.HasPrefix(target, scratch.dir) {
			continue
		}
		out = append(out, fmt.Sprintf("fd %d -> %s", fd, target))
	}
	sort.Strings(out)
	return out
}

// Main runs a package's tests and then the hygiene checks: no fd left open
// on a test volume, no mount left behind, no mount process still running.
// Use it from TestMain: func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }.
//
// When the process was started by RunHelper it runs that helper instead.
func Main(m *testing.M) int {
	if code, ok := runHelperIfAsked(); ok {
		return code
	}
	before, _ := OpenFDs(0)
	code := m.Run()
	if fds := leakedFDs(before); len(fds) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: test process leaked file descriptors on test volumes:\n  %s\n", strings.Join(fds, "\n  "))
		code = 1
	}
	if left := LeftoverMounts(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: leftover mounts after the run:\n  %s\n", strings.Join(left, "\n  "))
		cleanupLeftovers()
		code = 1
	}
	if scratch.dir != "" && len(mountsUnder(scratch.dir)) == 0 {
		_ = os.RemoveAll(scratch.dir)
	}
	return code
}

// cleanupLeftovers kills leftover mount processes and detaches their mounts.
func cleanupLeftovers() {
	live.Lock()
	ms := make([]*Mount, 0, len(live.mounts))
	for m := range live.mounts {
		ms = append(ms, m)
	}
	live.Unlock()
	for _, m := range ms {
		m.kill()
		lazyUnmount(m.Dir)
	}
	if scratch.dir != "" {
		for _, p := range mountsUnder(scratch.dir) {
			lazyUnmount(p)
		}
	}
}
