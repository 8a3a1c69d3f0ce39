package workload

import (
	"time"
)

// Workload is one benchmark: a fixed sequence of phases run by every
// client, and the figures derived from their measures.
type Workload interface {
	// Name is the short name used on the command line and in reports.
	Name() string
	// Params lists the parameters in effect, for the report.
	Params() []Param
	// Run performs the phases for one client. It must call c.Phase for
	// every phase, in the same order, even after errors (see package doc).
	Run(c *Client)
	// Metrics turns the measures of one run (all clients, one target, one
	// round; in phase order) into figures. Every figure is "higher is
	// better". A figure whose phase failed carries the error instead.
	Metrics(ms []Measure) []Metric
}

// Param is one named workload parameter, formatted for people.
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Phase describes one timed step of a workload.
type Phase struct {
	Name string
	// Unit is the unit of the phase's own figure (UnitMiBps or UnitOps).
	Unit string
	// Cold asks for the page cache to be dropped before the phase starts.
	Cold bool
	// Total is the work one client expects to do (bytes or operations, the
	// same unit it passes to Meter.Add), for the progress display; 0 if
	// unknown.
	Total int64
}

// Measure is what one phase of one run measured, summed over clients.
type Measure struct {
	Phase   string
	Unit    string        // the Phase's Unit
	Elapsed time.Duration // common start to the end of the slowest client
	Bytes   int64
	Ops     int64
	Counts  map[string]int64 // workload-specific counters (Meter.Count)
	Cold    bool             // the page cache was dropped before it
	Err     error            // first error of any client, else nil
}

// Metric is one figure of a run.
type Metric struct {
	Name  string
	Unit  string
	Value float64
	Cold  bool  // measured after dropping the page cache
	Err   error // the figure could not be measured
}

// Units of the figures.
const (
	UnitMiBps = "MiB/s" // mebibytes per second
	UnitOps   = "ops/s" // operations per second
)

// mib is one mebibyte.
const mib = 1 << 20

// Throughput returns the MiB/s figure of m named name.
func Throughput(m Measure, name string) Metric {
	return rate(m, name, UnitMiBps, float64(m.Bytes)/mib)
}

// OpsRate returns the ops/s figure of m named name.
func OpsRate(m Measure, name string) Metric {
	return rate(m, name, UnitOps, float64(m.Ops))
}

// CountRate returns counter key of m per second, named name, in unit.
func CountRate(m Measure, name, unit, key string) Metric {
	return rate(m, name, unit, float64(m.Counts[key]))
}

func rate(m Measure, name, unit string, amount float64) Metric {
	out := Metric{Name: name, Unit: unit, Cold: m.Cold, Err: m.Err}
	if m.Err == nil && m.Elapsed > 0 {
		out.Value = amount / m.Elapsed.Seconds()
	}
	return out
}

// PerPhase returns one figure per measure, named after its phase, in the
// phase's unit.
func PerPhase(ms []Measure) []Metric {
	out := make([]Metric, 0, len(ms))
	for _, m := range ms {
		if m.Unit == UnitMiBps {
			out = append(out, Throughput(m, m.Phase))
		} else {
			out = append(out, OpsRate(m, m.Phase))
		}
	}
	return out
}
