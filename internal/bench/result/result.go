package result

import (
	"encoding/json"
	"math"
	"time"

	"shoal/internal/bench/machine"
	"shoal/internal/bench/stats"
	"shoal/internal/bench/workload"
)

// Schema names the JSON schema of Report.
const Schema = "shoal-bench/1"

// Report is the result of one `shoal bench` run.
type Report struct {
	Schema    string        `json:"schema"`
	RunID     string        `json:"run_id"`
	Started   time.Time     `json:"started"`
	Finished  time.Time     `json:"finished"`
	Settings  Settings      `json:"settings"`
	Machine   machine.Facts `json:"machine"`
	Targets   []Target      `json:"targets"`
	Workloads []Workload    `json:"workloads"`
	// Notes are things a reader must know: the page cache could not be
	// dropped, a cleanup failed, and so on.
	Notes []string `json:"notes"`
	// Errors counts failed samples over the whole run.
	Errors int `json:"errors"`
}

// Settings are the run-wide parameters.
type Settings struct {
	Rounds     int    `json:"rounds"`
	Clients    int    `json:"clients"`
	DropCaches bool   `json:"drop_caches"` // asked to drop the page cache before cold phases
	CacheDrop  string `json:"cache_drop"`  // "dropped", "not permitted", "disabled" or "not needed"
	Seed       uint64 `json:"seed"`
	Order      string `json:"order"`   // how targets were scheduled: "interleaved"
	Command    string `json:"command"` // the command line, for the record
}

// Target is one measured target: one directory, or several measured
// together by parallel clients with a common start.
type Target struct {
	Name string       `json:"name"`
	Dirs []string     `json:"dirs"`
	FS   []machine.FS `json:"fs"`
}

// Workload holds the figures of one workload.
type Workload struct {
	Name    string           `json:"name"`
	Params  []workload.Param `json:"params"`
	Metrics []Metric         `json:"metrics"`
}

// Metric is one figure of a workload, for every target.
type Metric struct {
	Name    string         `json:"name"`
	Unit    string         `json:"unit"`
	Cold    bool           `json:"cold"`    // the page cache was dropped before it
	Results []TargetResult `json:"results"` // in target order
}

// TargetResult is one figure on one target: its samples (one per round)
// and their summary over the successful ones.
type TargetResult struct {
	Target  string        `json:"target"`
	Samples []Sample      `json:"samples"`
	Summary stats.Summary `json:"summary"`
	// Ratio is this target's median over the first target's; null when
	// either has no successful sample.
	Ratio  Float    `json:"ratio"`
	Errors []string `json:"errors,omitempty"`
}

// OK reports whether the figure has at least one successful sample.
func (r TargetResult) OK() bool { return r.Summary.N > 0 }

// Sample is one measurement of a figure.
type Sample struct {
	Round int     `json:"round"` // 1-based
	Value float64 `json:"value"`
	Error string  `json:"error,omitempty"` // set when the measurement failed; Value is then 0
}

// Float is a float64 that encodes NaN and infinities as JSON null.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

// UnmarshalJSON implements json.Unmarshaler; null becomes NaN.
func (f *Float) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = Float(math.NaN())
		return nil
	}
	var v float64
	err := json.Unmarshal(b, &v)
	*f = Float(v)
	return err
}

// Valid reports whether f is a number.
func (f Float) Valid() bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }
