package metrics

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shoal/internal/object"
)

// Object store operations, in the order of objectOps.
const (
	objGet = iota
	objPut
	objHead
	objDelete
	objList
)

var objectOps = []string{"get", "put", "head", "delete", "list"}

// objectInstruments are the object store's, pre-bound by operation.
type objectInstruments struct {
	hist       *prometheus.HistogramVec
	errs       *prometheus.CounterVec
	retryVec   *prometheus.CounterVec
	backoffVec *prometheus.CounterVec
	putBytes   prometheus.Counter
	seconds    []prometheus.Observer
	failures   []prometheus.Counter
	retries    []prometheus.Counter
	backoff    []prometheus.Counter
}

func newObjectInstruments() objectInstruments {
	o := objectInstruments{
		hist: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: ObjectSeconds, Help: "Time of requests to the object store backend (each retry is a request), by operation.",
			Buckets: latencyBuckets,
		}, []string{"op"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: ObjectErrors, Help: "Object store requests that failed, by operation (a missing object is an answer, not a failure).",
		}, []string{"op"}),
		retryVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: ObjectRetries, Help: "Object store requests that were retries of a failed one (by the one retry policy), by operation.",
		}, []string{"op"}),
		backoffVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: ObjectBackoff, Help: "Seconds the retry policy waited before retries, by operation.",
		}, []string{"op"}),
		putBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: ObjectPutBytes, Help: "Bytes sent by object store puts, retries included."}),
	}
	for _, op := range objectOps {
		o.seconds = append(o.seconds, o.hist.WithLabelValues(op))
		o.failures = append(o.failures, o.errs.WithLabelValues(op))
		o.retries = append(o.retries, o.retryVec.WithLabelValues(op))
		o.backoff = append(o.backoff, o.backoffVec.WithLabelValues(op))
	}
	return o
}

func (o *objectInstruments) register(reg *prometheus.Registry) {
	reg.MustRegister(o.hist, o.errs, o.retryVec, o.backoffVec, o.putBytes)
}

// ObjectRetry records one retry of an object store operation ("get",
// "put", "head", "delete", "list") after waiting waited: the volume's
// retry policy calls it (volume.StoreHook). Unknown operations are
// ignored.
func (r *Registry) ObjectRetry(op string, waited time.Duration) {
	for i, name := range objectOps {
		if name == op {
			r.objects.retries[i].Inc()
			r.objects.backoff[i].Add(waited.Seconds())
			return
		}
	}
}

// done records one request of op that started at t.
func (o *objectInstruments) done(op int, t time.Time, err error) {
	o.seconds[op].Observe(time.Since(t).Seconds())
	if err != nil && !errors.Is(err, object.ErrNotExist) {
		o.failures[op].Inc()
	}
}

// Objects returns s with every request counted and timed. Volumes put it
// directly over the backend, under the retries (volume.StoreHook), so
// each attempt counts. A Get is timed to its answer, not to the end of
// its body.
func (r *Registry) Objects(s object.Store) object.Store { return &meteredStore{s: s, o: &r.objects} }

// meteredStore is the wrapper Objects returns.
type meteredStore struct {
	s object.Store
	o *objectInstruments
}

var (
	_ object.Store     = (*meteredStore)(nil)
	_ object.Unwrapper = (*meteredStore)(nil)
)

func (m *meteredStore) Get(ctx context.Context, key string, off, limit int64) (io.ReadCloser, error) {
	t := time.Now()
	rc, err := m.s.Get(ctx, key, off, limit)
	m.o.done(objGet, t, err)
	return rc, err
}

func (m *meteredStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	t := time.Now()
	err := m.s.Put(ctx, key, r, size)
	m.o.done(objPut, t, err)
	m.o.putBytes.Add(float64(size))
	return err
}

func (m *meteredStore) Delete(ctx context.Context, key string) error {
	t := time.Now()
	err := m.s.Delete(ctx, key)
	m.o.done(objDelete, t, err)
	return err
}

func (m *meteredStore) Head(ctx context.Context, key string) (object.Info, error) {
	t := time.Now()
	info, err := m.s.Head(ctx, key)
	m.o.done(objHead, t, err)
	return info, err
}

func (m *meteredStore) List(ctx context.Context, prefix, after string, limit int) ([]object.Info, error) {
	t := time.Now()
	infos, err := m.s.List(ctx, prefix, after, limit)
	m.o.done(objList, t, err)
	return infos, err
}

func (m *meteredStore) String() string       { return m.s.String() }
func (m *meteredStore) Unwrap() object.Store { return m.s }
