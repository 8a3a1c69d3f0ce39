package bench

import (
	"fmt"
	"strings"
)

// Target is one thing measured: a directory, or several directories (for
// example one mount point per machine or namespace) used together by the
// clients with a common start.
type Target struct {
	Name string
	Dirs []string
}

// ParseTarget reads a target argument: DIR, DIR1,DIR2,... or NAME=DIR[,DIR...].
// Without a name the argument itself names the target.
func ParseTarget(arg string) (Target, error) {
	name, list := arg, arg
	if n, l, ok := strings.Cut(arg, "="); ok && n != "" && !strings.Contains(n, "/") {
		name, list = n, l
	}
	var dirs []string
	for _, d := range strings.Split(list, ",") {
		if d = strings.TrimSpace(d); d != "" {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		return Target{}, fmt.Errorf("target %q names no directory", arg)
	}
	return Target{Name: name, Dirs: dirs}, nil
}
