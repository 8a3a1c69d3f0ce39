package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"shoal/internal/bench/machine"
	"shoal/internal/bench/pattern"
	"shoal/internal/bench/progress"
	"shoal/internal/bench/result"
	"shoal/internal/bench/workload"
)

// MaxRecord is the largest read or write any workload issues at once
// (iozone's automatic mode goes up to 16 MiB records).
const MaxRecord = 16 << 20

// Options configure a run.
type Options struct {
	Targets    []Target
	Workloads  []workload.Workload
	Rounds     int
	Clients    int // parallel clients per target
	DropCaches bool
	Seed       uint64
	Command    string            // recorded in the report
	Progress   *progress.Display // nil: no progress output
}

// runner is the state of one Run.
type runner struct {
	opts  Options
	id    string
	pool  *pattern.Pool
	cache *cacheDropper
	table *result.Table

	mu    sync.Mutex
	notes []string
}

// Run measures every workload on every target, interleaved round by round
// (see the package doc), and returns the report. Errors of the file
// systems under test are in the report, not returned; Run itself does not
// fail. Cancelling ctx stops the run early (still cleaning up); the report
// then covers what was measured and says it was interrupted.
func Run(ctx context.Context, opts Options) *result.Report {
	opts.Rounds, opts.Clients = max(opts.Rounds, 1), max(opts.Clients, 1)
	r := &runner{opts: opts, id: newRunID(), cache: newCacheDropper(opts.DropCaches)}
	r.pool = pattern.New(opts.Seed, MaxRecord)
	names := make([]string, len(opts.Targets))
	for i, t := range opts.Targets {
		names[i] = t.Name
	}
	r.table = result.NewTable(names)
	rep := &result.Report{Schema: result.Schema, RunID: r.id, Started: time.Now().UTC(), Machine: machine.Collect()}
	rep.Targets = r.describeTargets()
	r.loop(ctx)
	r.cleanupAll()
	if ctx.Err() != nil {
		r.note("the run was interrupted (%v); figures cover the rounds completed", context.Cause(ctx))
	}
	if n := r.cache.note(); n != "" {
		r.note("%s", n)
	}
	rep.Finished = time.Now().UTC()
	rep.Workloads, rep.Errors = r.table.Workloads()
	rep.Notes = append([]string{}, r.notes...)
	rep.Settings = result.Settings{
		Rounds: opts.Rounds, Clients: opts.Clients, DropCaches: opts.DropCaches,
		CacheDrop: r.cache.status(), Seed: opts.Seed, Order: "interleaved", Command: opts.Command,
	}
	return rep
}

// loop is the interleaving: workload by workload, round by round, every
// target in turn.
func (r *runner) loop(ctx context.Context) {
	for _, w := range r.opts.Workloads {
		for round := 1; round <= r.opts.Rounds; round++ {
			for _, t := range r.opts.Targets {
				if ctx.Err() != nil {
					return
				}
				ms := r.runOne(ctx, w, t, round)
				r.table.Add(w.Name(), w.Params(), t.Name, round, ms)
			}
		}
	}
}

// runOne runs workload w once on target t with all clients.
func (r *runner) runOne(ctx context.Context, w workload.Workload, t Target, round int) []workload.Metric {
	hooks := workload.Hooks{BeforePhase: r.beforePhase}
	if d := r.opts.Progress; d != nil {
		hooks.AfterPhase = func(p workload.Phase, m workload.Measure) { d.PhaseDone(doneState(p, m, r.opts.Clients)) }
	}
	g := workload.NewGroup(r.opts.Clients, hooks)
	unit := fmt.Sprintf("%s-r%d", w.Name(), round)
	clients := make([]*workload.Client, r.opts.Clients)
	for i := range clients {
		dir := filepath.Join(r.runDir(t.Dirs[i%len(t.Dirs)]), unit, fmt.Sprintf("c%d", i))
		clients[i] = g.NewClient(ctx, dir, i, r.pool)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			clients[i].Fail("setup", err)
		}
	}
	if r.opts.Progress != nil {
		label := fmt.Sprintf("%s r%d/%d %s", w.Name(), round, r.opts.Rounds, t.Name)
		r.opts.Progress.Track(label, progressSource(g))
		defer r.opts.Progress.Stop()
	}
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Run(c)
		}()
	}
	wg.Wait()
	for _, d := range t.Dirs {
		r.remove(filepath.Join(r.runDir(d), unit))
	}
	return w.Metrics(g.Measures())
}

// beforePhase drops the page cache before cold phases.
func (r *runner) beforePhase(p workload.Phase) bool {
	if !p.Cold {
		return false
	}
	return r.cache.drop()
}

// runDir is this run's top directory inside dir.
func (r *runner) runDir(dir string) string { return filepath.Join(dir, "shoal-bench."+r.id) }

// remove deletes path and everything below it, noting a failure.
func (r *runner) remove(path string) {
	if err := os.RemoveAll(path); err != nil {
		r.note("cleanup: %v", err)
	}
}

// cleanupAll removes the run's top directory in every target directory.
func (r *runner) cleanupAll() {
	for _, t := range r.opts.Targets {
		for _, d := range t.Dirs {
			r.remove(r.runDir(d))
		}
	}
}

func (r *runner) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// describeTargets collects the file-system facts of every target directory.
func (r *runner) describeTargets() []result.Target {
	mounts := machine.ReadMounts()
	out := make([]result.Target, 0, len(r.opts.Targets))
	for _, t := range r.opts.Targets {
		rt := result.Target{Name: t.Name, Dirs: t.Dirs}
		for _, d := range t.Dirs {
			rt.FS = append(rt.FS, machine.Describe(d, mounts))
		}
		out = append(out, rt)
	}
	return out
}

// progressSource adapts a group to the progress display.
func progressSource(g *workload.Group) progress.Source {
	return func() (progress.State, bool) {
		p, done, total, start, ok := g.Progress()
		return progress.State{Phase: p.Name, Unit: p.Unit, Done: done, Total: total, Start: start}, ok
	}
}

// doneState describes a finished phase for the progress display.
func doneState(p workload.Phase, m workload.Measure, clients int) progress.State {
	done := m.Ops
	if p.Unit == workload.UnitMiBps {
		done = m.Bytes
	}
	end, name := time.Now(), p.Name
	if m.Err != nil {
		name += " FAILED"
	}
	return progress.State{Phase: name, Unit: p.Unit, Done: done, Total: p.Total * int64(clients), Start: end.Add(-m.Elapsed), End: end}
}

// newRunID returns a unique, sortable id: UTC time plus random bits.
func newRunID() string {
	var b [4]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}
