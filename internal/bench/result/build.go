package result

import (
	"shoal/internal/bench/stats"
	"shoal/internal/bench/workload"
)

// Table collects samples while a run goes on and turns them into the
// Workloads of a Report. It keeps workloads and figures in first-seen
// order and targets in the order given to NewTable.
type Table struct {
	targets   []string
	workloads []*Workload
	params    map[string][]workload.Param
	index     map[[2]string]int // (workload, metric) → position in its Metrics
	samples   map[[3]string][]Sample
}

// NewTable returns an empty table for the named targets.
func NewTable(targets []string) *Table {
	return &Table{
		targets: targets,
		params:  map[string][]workload.Param{},
		index:   map[[2]string]int{},
		samples: map[[3]string][]Sample{},
	}
}

// Add records the figures of one run of workload w on target in round.
func (t *Table) Add(w string, params []workload.Param, target string, round int, ms []workload.Metric) {
	wl := t.workload(w, params)
	for _, m := range ms {
		k := [2]string{w, m.Name}
		if _, ok := t.index[k]; !ok {
			t.index[k] = len(wl.Metrics)
			wl.Metrics = append(wl.Metrics, Metric{Name: m.Name, Unit: m.Unit})
		}
		if m.Cold {
			wl.Metrics[t.index[k]].Cold = true
		}
		s := Sample{Round: round, Value: m.Value}
		if m.Err != nil {
			s = Sample{Round: round, Error: m.Err.Error()}
		}
		sk := [3]string{w, m.Name, target}
		t.samples[sk] = append(t.samples[sk], s)
	}
}

func (t *Table) workload(name string, params []workload.Param) *Workload {
	for _, w := range t.workloads {
		if w.Name == name {
			return w
		}
	}
	w := &Workload{Name: name, Params: params}
	t.workloads = append(t.workloads, w)
	return w
}

// Workloads returns the summarised figures and the number of failed
// samples.
func (t *Table) Workloads() ([]Workload, int) {
	out := make([]Workload, 0, len(t.workloads))
	failed := 0
	for _, w := range t.workloads {
		wl := Workload{Name: w.Name, Params: w.Params}
		for _, m := range w.Metrics {
			m.Results = nil
			for _, tg := range t.targets {
				r := summarize(tg, t.samples[[3]string{w.Name, m.Name, tg}])
				failed += len(r.Errors)
				m.Results = append(m.Results, r)
			}
			setRatios(m.Results)
			wl.Metrics = append(wl.Metrics, m)
		}
		out = append(out, wl)
	}
	return out, failed
}

// summarize builds one target's result from its samples.
func summarize(target string, samples []Sample) TargetResult {
	r := TargetResult{Target: target, Samples: samples}
	var ok []float64
	for _, s := range samples {
		if s.Error != "" {
			r.Errors = append(r.Errors, s.Error)
			continue
		}
		ok = append(ok, s.Value)
	}
	if r.Samples == nil {
		r.Samples = []Sample{}
	}
	r.Summary = stats.Summarize(ok)
	return r
}

// setRatios sets each result's ratio to the first one's median.
func setRatios(rs []TargetResult) {
	for i := range rs {
		base, x := rs[0].Summary.Median, rs[i].Summary.Median
		if !rs[0].OK() || !rs[i].OK() {
			rs[i].Ratio = Float(stats.Ratio(0, 0))
			continue
		}
		rs[i].Ratio = Float(stats.Ratio(x, base))
	}
}
