package crash

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"time"
)

// worker runs a random mix of operations in its own directory, journaling
// what each acknowledged operation left behind.
type worker struct {
	dir string // the worker's directory in the current mount
	rng *rand.Rand
	j   *journal
	seq int
	ops int // operations acknowledged this round
	// tolerate: a failed operation is journaled as uncertain and the
	// workload goes on (the store is expected to fail); otherwise the
	// first failure ends run.
	tolerate bool
	failed   int // operations failed this round (with tolerate)
}

// run performs operations until one fails (the mount was killed) and
// returns that failure, or nil if stop was set first.
func (w *worker) run(stop *atomic.Bool) error {
	for !stop.Load() {
		if err := w.step(); err != nil {
			w.j.fail()
			if !w.tolerate {
				return err
			}
			w.failed++
			time.Sleep(10 * time.Millisecond)
			continue
		}
		w.ops++
	}
	return nil
}

// step performs one random operation.
func (w *worker) step() error {
	files, dirs := w.names()
	r := w.rng.IntN(100)
	switch {
	case len(files) > 40 && r < 50, r < 8 && len(files) > 0:
		return w.unlink(pick(w.rng, files))
	case r < 35:
		return w.newFile(true)
	case r < 55:
		return w.newFile(false)
	case r < 70 && len(files) > 0:
		return w.appendFile(pick(w.rng, files), w.rng.IntN(2) == 0)
	case r < 88 && len(files) > 0:
		return w.rename(pick(w.rng, files), files)
	case r < 94 || len(dirs) == 0:
		return w.mkdir()
	default:
		return w.rmdir(pick(w.rng, dirs))
	}
}

// names lists the acknowledged files and directories, sorted.
func (w *worker) names() (files, dirs []string) {
	for n, st := range w.j.acked {
		if st.dir {
			dirs = append(dirs, n)
		} else {
			files = append(files, n)
		}
	}
	sort.Strings(files)
	sort.Strings(dirs)
	return files, dirs
}

func pick(rng *rand.Rand, names []string) string { return names[rng.IntN(len(names))] }

// content returns n random bytes (never all zero: zeros mean holes).
func (w *worker) content() []byte {
	var n int
	switch r := w.rng.IntN(100); {
	case r < 2:
		n = 4<<20 + w.rng.IntN(1<<20) // crosses a block boundary
	case r < 12:
		n = w.rng.IntN(2 << 20)
	default:
		n = w.rng.IntN(64 << 10)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(w.rng.Uint32()) | 1
	}
	return b
}

func (w *worker) newName(prefix string) string {
	w.seq++
	return fmt.Sprintf("%s%d", prefix, w.seq)
}

// newFile creates a file, writes it and acknowledges it after fsync (sync)
// or close.
func (w *worker) newFile(sync bool) error {
	name, data := w.newName("f"), w.content()
	w.j.begin(map[string][]want{name: {{partial: true, st: state{data: data}}}})
	f, err := os.OpenFile(filepath.Join(w.dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return w.writeAck(f, name, data, data, sync)
}

// appendFile appends to an acknowledged file.
func (w *worker) appendFile(name string, sync bool) error {
	old := w.j.acked[name].data
	data := append(append([]byte{}, old...), w.content()...)
	w.j.begin(map[string][]want{name: {{partial: true, base: old, st: state{data: data}}}})
	f, err := os.OpenFile(filepath.Join(w.dir, name), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	return w.writeAck(f, name, data[len(old):], data, sync)
}

// writeAck writes b to f, then fsyncs or closes, and acknowledges that
// name holds all.
func (w *worker) writeAck(f *os.File, name string, b, all []byte, sync bool) error {
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
		w.j.ack(map[string]*state{name: {data: all}})
		return f.Close()
	}
	if err := f.Close(); err != nil {
		return err
	}
	w.j.ack(map[string]*state{name: {data: all}})
	return nil
}

// rename moves a file to a new name or over another file.
func (w *worker) rename(from string, files []string) error {
	to := w.newName("r")
	if w.rng.IntN(3) == 0 {
		to = pick(w.rng, files)
	}
	if to == from {
		return nil
	}
	st := w.j.acked[from]
	w.j.begin(map[string][]want{from: {{absent: true}}, to: {{st: st}}})
	if err := os.Rename(filepath.Join(w.dir, from), filepath.Join(w.dir, to)); err != nil {
		return err
	}
	w.j.ack(map[string]*state{from: nil, to: &st})
	return nil
}

func (w *worker) unlink(name string) error {
	w.j.begin(map[string][]want{name: {{absent: true}}})
	if err := os.Remove(filepath.Join(w.dir, name)); err != nil {
		return err
	}
	w.j.ack(map[string]*state{name: nil})
	return nil
}

func (w *worker) mkdir() error {
	name := w.newName("d")
	w.j.begin(map[string][]want{name: {{st: state{dir: true}}}})
	if err := os.Mkdir(filepath.Join(w.dir, name), 0o755); err != nil {
		return err
	}
	w.j.ack(map[string]*state{name: {dir: true}})
	return nil
}

func (w *worker) rmdir(name string) error {
	w.j.begin(map[string][]want{name: {{absent: true}}})
	if err := os.Remove(filepath.Join(w.dir, name)); err != nil {
		return err
	}
	w.j.ack(map[string]*state{name: nil})
	return nil
}
