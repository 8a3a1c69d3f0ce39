package machine

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Facts describes the machine a benchmark ran on.
type Facts struct {
	Hostname string   `json:"hostname"`
	CPUModel string   `json:"cpu_model"`
	Cores    int      `json:"cores"`
	MemBytes int64    `json:"mem_bytes"`
	Kernel   string   `json:"kernel"` // uname -sr
	Arch     string   `json:"arch"`
	Go       string   `json:"go"`
	Notes    []string `json:"notes,omitempty"`
}

// Collect reads the machine facts.
func Collect() Facts {
	f := Facts{Cores: runtime.NumCPU(), Arch: runtime.GOARCH, Go: runtime.Version()}
	f.Hostname, _ = os.Hostname()
	var err error
	if f.CPUModel, err = cpuModel("/proc/cpuinfo"); err != nil {
		f.Notes = append(f.Notes, "cpu model: "+err.Error())
	}
	if f.MemBytes, err = memTotal("/proc/meminfo"); err != nil {
		f.Notes = append(f.Notes, "memory: "+err.Error())
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		f.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	}
	return f
}

// cpuModel returns the first "model name" (x86) or "Model"/"Processor"
// (arm) line of a cpuinfo file.
func cpuModel(path string) (string, error) {
	lines, err := readLines(path)
	if err != nil {
		return "", err
	}
	for _, key := range []string{"model name", "Model", "Processor", "cpu model"} {
		for _, l := range lines {
			k, v, ok := strings.Cut(l, ":")
			if ok && strings.TrimSpace(k) == key {
				return strings.TrimSpace(v), nil
			}
		}
	}
	return "", fmt.Errorf("%s: no model line", path)
}

// memTotal returns MemTotal of a meminfo file in bytes.
func memTotal(path string) (int64, error) {
	lines, err := readLines(path)
	if err != nil {
		return 0, err
	}
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %q: %w", path, l, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("%s: no MemTotal", path)
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out, sc.Err()
}
