package crash

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// state is what a path holds: nothing, a directory, or a file's bytes.
type state struct {
	dir  bool
	data []byte
}

// want is one state a path may be found in after a crash.
type want struct {
	absent bool
	st     state
	// partial: a file whose bytes are base followed by some of data's
	// bytes past len(base), each one either data's or zero (a write that
	// was in flight: some of its blocks may have been committed).
	partial bool
	base    []byte
}

func (w want) String() string {
	switch {
	case w.absent:
		return "absent"
	case w.st.dir:
		return "a directory"
	case w.partial:
		return fmt.Sprintf("a file of %d bytes plus up to %d in flight", len(w.base), len(w.st.data)-len(w.base))
	}
	return fmt.Sprintf("a file of %d bytes", len(w.st.data))
}

// matches reports whether what was found (nil: absent) is allowed by w.
func (w want) matches(found *state) bool {
	switch {
	case found == nil:
		return w.absent
	case w.absent || found.dir != w.st.dir:
		return false
	case found.dir:
		return true
	case !w.partial:
		return bytes.Equal(found.data, w.st.data)
	}
	d := found.data
	if len(d) < len(w.base) || len(d) > len(w.st.data) || !bytes.Equal(d[:len(w.base)], w.base) {
		return false
	}
	for i := len(w.base); i < len(d); i++ {
		if d[i] != 0 && d[i] != w.st.data[i] {
			return false
		}
	}
	return true
}

// journal is one worker's record of acknowledged states, kept in the test
// process (outside the mount), and of the operation in flight.
type journal struct {
	acked   map[string]state
	pending map[string][]want // paths the in-flight operation touches
	// uncertain: paths of operations that failed (a full store, say):
	// they may hold any of their wants until the next verify, and the
	// workload leaves them alone meanwhile.
	uncertain map[string][]want
}

func newJournal() *journal {
	return &journal{acked: map[string]state{}, pending: map[string][]want{}, uncertain: map[string][]want{}}
}

// fail records that the operation in flight failed: its paths become
// uncertain.
func (j *journal) fail() {
	for name, ws := range j.pending {
		j.uncertain[name] = append(j.uncertain[name], ws...)
		delete(j.acked, name)
	}
	j.pending = map[string][]want{}
}

// current returns the acknowledged state of name as a want.
func (j *journal) current(name string) want {
	st, ok := j.acked[name]
	if !ok {
		return want{absent: true}
	}
	return want{st: st}
}

// begin records that an operation may leave each name in any of its
// wants (the current state is always allowed).
func (j *journal) begin(alts map[string][]want) {
	j.pending = map[string][]want{}
	for name, ws := range alts {
		j.pending[name] = append([]want{j.current(name)}, ws...)
	}
}

// ack records the operation as done: names take their new states.
func (j *journal) ack(set map[string]*state) {
	for name, st := range set {
		if st == nil {
			delete(j.acked, name)
		} else {
			j.acked[name] = *st
		}
	}
	j.pending = map[string][]want{}
}

// verify compares dir's contents with the journal and returns the
// problems; afterwards the journal holds what was found (so the next
// round starts from it).
func (j *journal) verify(dir string) []string {
	found, problems := readTree(dir)
	names := map[string]bool{}
	for n := range found {
		names[n] = true
	}
	for n := range j.acked {
		names[n] = true
	}
	j.fail() // the operation in flight when the mount died
	for n := range j.uncertain {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		ws, ok := j.uncertain[n]
		if !ok {
			ws = []want{j.current(n)}
		}
		var f *state
		if st, ok := found[n]; ok {
			f = &st
		}
		if !anyMatch(ws, f) {
			problems = append(problems, fmt.Sprintf("%s: found %s, want one of %v", filepath.Join(dir, n), describe(f), ws))
		}
	}
	j.acked, j.pending, j.uncertain = found, map[string][]want{}, map[string][]want{}
	return problems
}

func anyMatch(ws []want, f *state) bool {
	for _, w := range ws {
		if w.matches(f) {
			return true
		}
	}
	return false
}

func describe(f *state) string {
	switch {
	case f == nil:
		return "nothing"
	case f.dir:
		return "a directory"
	}
	return fmt.Sprintf("a file of %d bytes", len(f.data))
}

// readTree reads the entries of dir (one level: workers do not nest
// files in their subdirectories). Every listed entry must stat: an entry
// that points nowhere is a problem.
func readTree(dir string) (map[string]state, []string) {
	out := map[string]state{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return out, []string{fmt.Sprintf("readdir %s: %v", dir, err)}
	}
	var problems []string
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil {
			problems = append(problems, fmt.Sprintf("entry %s points nowhere: %v", p, err))
			continue
		}
		if fi.IsDir() {
			out[e.Name()] = state{dir: true}
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			problems = append(problems, fmt.Sprintf("read %s: %v", p, err))
			continue
		}
		out[e.Name()] = state{data: b}
	}
	return out, problems
}
