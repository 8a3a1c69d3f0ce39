package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"shoal/internal/data"
	"shoal/internal/meta"
	"shoal/internal/vfs"
)

// Sources are the counters and gauges the layers keep themselves; a
// scrape reads each once. A nil field is left out.
type Sources struct {
	Data   func() data.Stats
	VFS    func() vfs.Stats
	Engine func() meta.TxnStats
}

// Watch exports src's values on every scrape: they cost the hot path
// nothing beyond the atomic counters the layers already keep.
func (r *Registry) Watch(src Sources) { r.reg.MustRegister(sourceCollector{src}) }

// sourceCollector turns Sources into constant metrics at scrape time. It
// is an unchecked collector (Describe sends nothing): its metrics are
// fixed, but their values come from elsewhere.
type sourceCollector struct{ src Sources }

func (sourceCollector) Describe(chan<- *prometheus.Desc) {}

func (c sourceCollector) Collect(ch chan<- prometheus.Metric) {
	if c.src.Data != nil {
		collectData(ch, c.src.Data())
	}
	if c.src.VFS != nil {
		collectVFS(ch, c.src.VFS())
	}
	if c.src.Engine != nil {
		collectEngine(ch, c.src.Engine())
	}
}

// emit sends one sample of metric name (with label pairs, if any).
func emit(ch chan<- prometheus.Metric, name, help string, t prometheus.ValueType, v float64, labels ...string) {
	var keys, values []string
	for i := 0; i+1 < len(labels); i += 2 {
		keys, values = append(keys, labels[i]), append(values, labels[i+1])
	}
	ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, keys, nil), t, v, values...)
}

const (
	counter = prometheus.CounterValue
	gauge   = prometheus.GaugeValue
)

func collectData(ch chan<- prometheus.Metric, s data.Stats) {
	emit(ch, BlocksPut, "Block objects stored.", counter, float64(s.BlocksPut))
	emit(ch, BlockPutFails, "Block uploads that failed after the store's retries.", counter, float64(s.PutFailures))
	emit(ch, BlocksFetched, "Gets of block data, by kind.", counter, float64(s.BlocksFetched), "kind", "block")
	emit(ch, BlocksFetched, "Gets of block data, by kind.", counter, float64(s.RangesFetched), "kind", "range")
	emit(ch, FetchedBytes, "Block bytes received from the object store.", counter, float64(s.BytesFetched))
	emit(ch, CacheHits, "Block reads served from the read cache.", counter, float64(s.CacheHits))
	emit(ch, CacheMisses, "Block reads that went to the object store.", counter, float64(s.CacheMisses))
	emit(ch, CacheBytes, "Bytes held by the read cache.", gauge, float64(s.CacheUsed))
	emit(ch, BufferBytes, "Unflushed write bytes held in the write buffer.", gauge, float64(s.BufferUsed))
	emit(ch, BufferLimit, "Size of the write buffer.", gauge, float64(s.BufferLimit))
}

func collectVFS(ch chan<- prometheus.Metric, s vfs.Stats) {
	emit(ch, OpenHandles, "Open file handles.", gauge, float64(s.OpenHandles))
	emit(ch, OpenFiles, "Distinct files open through this mount.", gauge, float64(s.OpenFiles))
	emit(ch, LockedFiles, "Open files through which this mount took a lock since they were opened (files, not locks; only the last close lowers it).", gauge, float64(s.LockedFiles))
	emit(ch, CompactBacklog, "Chunks due for compaction: the one being compacted and those queued behind it.", gauge, float64(s.CompactionBacklog))
	emit(ch, CleanerBacklog, "Freed slices waiting to be deleted.", gauge, float64(s.CleanerBacklog))
	age := -1.0
	if s.HeartbeatAge >= 0 {
		age = s.HeartbeatAge.Seconds()
	}
	emit(ch, HeartbeatAge, "Seconds since the session's last renewal was sent; -1 without a session.", gauge, age)
}

func collectEngine(ch chan<- prometheus.Metric, s meta.TxnStats) {
	const txnHelp, secHelp = "Metadata transactions, by kind.", "Seconds spent in metadata transactions, by kind."
	emit(ch, EngineTxns, txnHelp, counter, float64(s.Updates), "kind", "update")
	emit(ch, EngineTxns, txnHelp, counter, float64(s.Views), "kind", "view")
	emit(ch, EngineTxnSecs, secHelp, counter, s.UpdateTime.Seconds(), "kind", "update")
	emit(ch, EngineTxnSecs, secHelp, counter, s.ViewTime.Seconds(), "kind", "view")
	emit(ch, EngineRetries, "Extra attempts of update transactions (after a conflict or a brief outage).", counter, float64(s.Retries))
	emit(ch, EngineRetrySecs, "Total time of the update transactions that retried.", counter, s.RetryTime.Seconds())
	emit(ch, EngineConflicts, "Update transactions that gave up still conflicting after the retry bound (the operation failed); conflicts a retry cleared count as retries.", counter, float64(s.Conflicts))
	emit(ch, EngineFailed, "Update transactions that returned an error.", counter, float64(s.Failed))
	emit(ch, EngineCached, "Point reads (lookups, getattrs; on SQLite opens too) answered from the engine's client-side cache (Redis, SQLite), not a transaction.", counter, float64(s.Cached))
}
