package metrics

import (
	"fmt"
	"io"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Snapshot is a mount's totals at one moment, as plain numbers: what
// `shoal stats` shows (from two snapshots a second apart) and what
// `stats --once --json` prints. (The console's per-mount figures come
// from meta.SessionReport instead.) Counters are totals since the mount
// started; the rest are gauges.
type Snapshot struct {
	Uptime float64 `json:"uptime_seconds"`
	// Ops are the FUSE requests by operation (only those seen at least
	// once); Objects the object store requests by operation.
	Ops          map[string]OpTotals `json:"ops"`
	ReadBytes    int64               `json:"read_bytes"`
	WrittenBytes int64               `json:"written_bytes"`
	Objects      map[string]OpTotals `json:"objects"`
	PutBytes     int64               `json:"object_put_bytes"`
	FetchedBytes int64               `json:"object_fetched_bytes"`
	BlocksPut    int64               `json:"blocks_put"`
	PutFailures  int64               `json:"block_put_failures"` // uploads that failed after the retries
	Engine       EngineTotals        `json:"engine"`
	CacheHits    int64               `json:"cache_hits"`
	CacheMisses  int64               `json:"cache_misses"`
	BufferBytes  int64               `json:"write_buffer_bytes"`
	BufferLimit  int64               `json:"write_buffer_limit_bytes"`
	OpenHandles  int64               `json:"open_handles"`
	OpenFiles    int64               `json:"open_files"`
	LockedFiles  int64               `json:"locked_files"`
	Compaction   int64               `json:"compaction_backlog"`
	Cleaner      int64               `json:"cleaner_backlog"`
	HeartbeatAge float64             `json:"heartbeat_age_seconds"` // -1: no session
}

// OpTotals count one kind of request.
type OpTotals struct {
	Count   int64   `json:"count"`
	Errors  int64   `json:"errors"`
	Seconds float64 `json:"seconds"` // their total time
	// Retries (of the Count) and the Backoff waited before them: object
	// store requests only.
	Retries int64   `json:"retries,omitempty"`
	Backoff float64 `json:"backoff_seconds,omitempty"`
}

// Sub is o minus prev.
func (o OpTotals) Sub(prev OpTotals) OpTotals {
	return OpTotals{Count: o.Count - prev.Count, Errors: o.Errors - prev.Errors, Seconds: o.Seconds - prev.Seconds,
		Retries: o.Retries - prev.Retries, Backoff: o.Backoff - prev.Backoff}
}

// Mean is the average time of one request; 0 when there were none.
func (o OpTotals) Mean() time.Duration {
	if o.Count == 0 {
		return 0
	}
	return time.Duration(o.Seconds / float64(o.Count) * float64(time.Second))
}

// EngineTotals count metadata transactions.
type EngineTotals struct {
	Updates       int64   `json:"updates"`
	Views         int64   `json:"views"`
	UpdateSeconds float64 `json:"update_seconds"`
	ViewSeconds   float64 `json:"view_seconds"`
	Retries       int64   `json:"retries"`
	RetrySeconds  float64 `json:"retried_seconds"`
	Conflicts     int64   `json:"conflicts"`
	Failed        int64   `json:"failed"`
	Cached        int64   `json:"cached_reads"`
}

// Snapshot returns the registry's totals now.
func (r *Registry) Snapshot() (Snapshot, error) {
	fams, err := r.reg.Gather()
	if err != nil {
		return Snapshot{}, fmt.Errorf("metrics: %w", err)
	}
	byName := make(map[string]*dto.MetricFamily, len(fams))
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	return fromFamilies(byName), nil
}

// Parse reads a scrape of a mount's /metrics (the text format) into a
// Snapshot. Metrics it does not know are ignored.
func Parse(in io.Reader) (Snapshot, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(in)
	if err != nil {
		return Snapshot{}, fmt.Errorf("metrics: parsing a scrape: %w", err)
	}
	return fromFamilies(fams), nil
}

// fromFamilies builds a Snapshot from gathered or parsed families.
func fromFamilies(f map[string]*dto.MetricFamily) Snapshot {
	s := Snapshot{
		Uptime:       value(f, UptimeSeconds, ""),
		Ops:          opTotals(f, FuseOpSeconds, FuseOpErrors),
		ReadBytes:    int64(value(f, FuseReadBytes, "")),
		WrittenBytes: int64(value(f, FuseWriteBytes, "")),
		Objects:      opTotals(f, ObjectSeconds, ObjectErrors),
		PutBytes:     int64(value(f, ObjectPutBytes, "")),
		FetchedBytes: int64(value(f, FetchedBytes, "")),
		BlocksPut:    int64(value(f, BlocksPut, "")),
		PutFailures:  int64(value(f, BlockPutFails, "")),
		CacheHits:    int64(value(f, CacheHits, "")),
		CacheMisses:  int64(value(f, CacheMisses, "")),
		BufferBytes:  int64(value(f, BufferBytes, "")),
		BufferLimit:  int64(value(f, BufferLimit, "")),
		OpenHandles:  int64(value(f, OpenHandles, "")),
		OpenFiles:    int64(value(f, OpenFiles, "")),
		LockedFiles:  int64(value(f, LockedFiles, "")),
		Compaction:   int64(value(f, CompactBacklog, "")),
		Cleaner:      int64(value(f, CleanerBacklog, "")),
		HeartbeatAge: -1,
	}
	if _, ok := f[HeartbeatAge]; ok {
		s.HeartbeatAge = value(f, HeartbeatAge, "")
	}
	s.Engine = EngineTotals{
		Updates: int64(value(f, EngineTxns, "update")), Views: int64(value(f, EngineTxns, "view")),
		UpdateSeconds: value(f, EngineTxnSecs, "update"), ViewSeconds: value(f, EngineTxnSecs, "view"),
		Retries: int64(value(f, EngineRetries, "")), RetrySeconds: value(f, EngineRetrySecs, ""),
		Conflicts: int64(value(f, EngineConflicts, "")), Failed: int64(value(f, EngineFailed, "")),
		Cached: int64(value(f, EngineCached, "")),
	}
	return s
}

// value sums the samples of a counter or gauge family whose first label
// has value label ("" for any).
func value(f map[string]*dto.MetricFamily, name, label string) float64 {
	fam, ok := f[name]
	if !ok {
		return 0
	}
	var v float64
	for _, m := range fam.GetMetric() {
		if label != "" && (len(m.GetLabel()) == 0 || m.GetLabel()[0].GetValue() != label) {
			continue
		}
		switch {
		case m.Counter != nil:
			v += m.GetCounter().GetValue()
		case m.Gauge != nil:
			v += m.GetGauge().GetValue()
		case m.Untyped != nil:
			v += m.GetUntyped().GetValue()
		}
	}
	return v
}

// opTotals reads a histogram by op and its error counter by op; ops
// never seen are left out.
func opTotals(f map[string]*dto.MetricFamily, hist, errs string) map[string]OpTotals {
	out := map[string]OpTotals{}
	fam, ok := f[hist]
	if !ok {
		return out
	}
	for _, m := range fam.GetMetric() {
		h := m.GetHistogram()
		if h.GetSampleCount() == 0 || len(m.GetLabel()) == 0 {
			continue
		}
		op := m.GetLabel()[0].GetValue()
		out[op] = OpTotals{Count: int64(h.GetSampleCount()), Seconds: h.GetSampleSum(), Errors: int64(value(f, errs, op))}
	}
	if hist != ObjectSeconds {
		return out
	}
	for op, o := range out {
		o.Retries, o.Backoff = int64(value(f, ObjectRetries, op)), value(f, ObjectBackoff, op)
		out[op] = o
	}
	return out
}
