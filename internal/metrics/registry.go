package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// latencyBuckets are the histogram buckets of every latency, in seconds:
// 50 µs to about 3 s, a factor of 4 apart (a cached getattr to a slow
// object-store put).
var latencyBuckets = prometheus.ExponentialBuckets(50e-6, 4, 9)

// Registry owns a mount's Prometheus registry and its instruments. Its
// methods on the hot path (Op, Read, Written and the object store
// wrapper's) index pre-bound children by integer: no label lookup, no
// allocation.
type Registry struct {
	reg     *prometheus.Registry
	started time.Time

	ops     []prometheus.Observer // by fusefs op number
	opErrs  []prometheus.Counter
	read    prometheus.Counter
	written prometheus.Counter

	objects objectInstruments
}

// New returns a registry whose FUSE instruments have one child per name
// of ops (fusefs.OpNames(); an op's number is its index).
func New(ops []string) *Registry {
	r := &Registry{reg: prometheus.NewRegistry(), started: time.Now()}
	hist := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: FuseOpSeconds, Help: "Time to answer FUSE requests, by operation.", Buckets: latencyBuckets,
	}, []string{"op"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: FuseOpErrors, Help: "FUSE requests answered with an error, by operation.",
	}, []string{"op"})
	for _, op := range ops {
		r.ops = append(r.ops, hist.WithLabelValues(op))
		r.opErrs = append(r.opErrs, errs.WithLabelValues(op))
	}
	r.read = prometheus.NewCounter(prometheus.CounterOpts{Name: FuseReadBytes, Help: "Bytes returned by FUSE read requests."})
	r.written = prometheus.NewCounter(prometheus.CounterOpts{Name: FuseWriteBytes, Help: "Bytes accepted by FUSE write requests."})
	r.objects = newObjectInstruments()
	uptime := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: UptimeSeconds, Help: "Seconds since the mount started."},
		func() float64 { return time.Since(r.started).Seconds() })
	r.reg.MustRegister(hist, errs, r.read, r.written, uptime)
	r.objects.register(r.reg)
	return r
}

// Op records one FUSE request of operation op (an index into the names
// New was given) that took d; failed when it was answered with an error.
func (r *Registry) Op(op int, d time.Duration, failed bool) {
	if op < 0 || op >= len(r.ops) {
		return
	}
	r.ops[op].Observe(d.Seconds())
	if failed {
		r.opErrs[op].Inc()
	}
}

// Read records n bytes returned by a read request.
func (r *Registry) Read(n int) { r.read.Add(float64(n)) }

// Written records n bytes accepted by a write request.
func (r *Registry) Written(n int) { r.written.Add(float64(n)) }

// Handler serves the registry in the Prometheus exposition formats.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{Registry: r.reg})
}

// Gatherer returns the registry, for tests and Snapshot.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }
