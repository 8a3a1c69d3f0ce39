package data

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shoal/internal/meta"
	"shoal/internal/object"
	"shoal/internal/object/memstore"
)

// trace is an ordered event log shared by a recording store and an engine.
type trace struct {
	mu     sync.Mutex
	events []string
}

func (t *trace) add(format string, args ...any) {
	t.mu.Lock()
	t.events = append(t.events, fmt.Sprintf(format, args...))
	t.mu.Unlock()
}

func (t *trace) snapshot() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.events...)
}

// recordStore logs every successful Put to a trace.
type recordStore struct {
	object.Store
	log  *trace
	puts atomic.Int64
	gets atomic.Int64
}

func (r *recordStore) Put(ctx context.Context, key string, rd io.Reader, size int64) error {
	err := r.Store.Put(ctx, key, rd, size)
	if err == nil {
		r.puts.Add(1)
		r.log.add("put %s", key)
	}
	return err
}

func (r *recordStore) Get(ctx context.Context, key string, off, limit int64) (io.ReadCloser, error) {
	r.gets.Add(1)
	return r.Store.Get(ctx, key, off, limit)
}

func (r *recordStore) Unwrap() object.Store { return r.Store }

// failStore fails Puts while failing is set, and can delay them.
type failStore struct {
	object.Store
	failing atomic.Bool
	delay   atomic.Int64 // nanoseconds per Put
	fails   atomic.Int64
}

var errInjected = errors.New("injected put failure")

func (f *failStore) Put(ctx context.Context, key string, rd io.Reader, size int64) error {
	if d := f.delay.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	if f.failing.Load() {
		f.fails.Add(1)
		return errInjected
	}
	return f.Store.Put(ctx, key, rd, size)
}

func (f *failStore) Unwrap() object.Store { return f.Store }

// engine plays the metadata engine: slice ids and chunk slice lists.
type engine struct {
	mu     sync.Mutex
	nextID meta.SliceID
	chunks map[meta.Ino]map[uint32][]meta.Slice
	log    *trace
}

func newEngine(log *trace) *engine {
	return &engine{chunks: map[meta.Ino]map[uint32][]meta.Slice{}, log: log}
}

func (e *engine) newID(context.Context) (meta.SliceID, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.nextID++
	return e.nextID, nil
}

func (e *engine) committer(ino meta.Ino) CommitFunc {
	return func(_ context.Context, ws []meta.SliceWrite) error {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.chunks[ino] == nil {
			e.chunks[ino] = map[uint32][]meta.Slice{}
		}
		for _, r := range ws {
			s := r.S
			e.chunks[ino][r.Index] = append(e.chunks[ino][r.Index], s)
			if e.log != nil {
				e.log.add("commit %d %d", s.ID, s.Size)
			}
		}
		return nil
	}
}

func (e *engine) slices(ino meta.Ino, index uint32) []meta.Slice {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]meta.Slice(nil), e.chunks[ino][index]...)
}

// readFile reads [off, off+n) of ino through r using the engine's lists.
func (e *engine) readFile(t testing.TB, r *Reader, ino meta.Ino, off uint64, n int) []byte {
	t.Helper()
	out, err := e.readFileE(r, ino, off, n)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (e *engine) readFileE(r *Reader, ino meta.Ino, off uint64, n int) ([]byte, error) {
	out := make([]byte, n)
	buf := out
	for len(buf) > 0 {
		index := uint32(off / meta.ChunkSize)
		pos := uint32(off % meta.ChunkSize)
		k := min(len(buf), meta.ChunkSize-int(pos))
		if _, err := r.Read(context.Background(), index, e.slices(ino, index), pos, buf[:k]); err != nil {
			return nil, fmt.Errorf("read ino %d off %d len %d: %w", ino, off, k, err)
		}
		buf = buf[k:]
		off += uint64(k)
	}
	return out, nil
}

// model is the byte image a file should read as.
type model struct{ data []byte }

func (m *model) write(off uint64, p []byte) {
	if end := int(off) + len(p); end > len(m.data) {
		m.data = append(m.data, make([]byte, end-len(m.data))...)
	}
	copy(m.data[off:], p)
}

func (m *model) read(off uint64, n int) []byte {
	out := make([]byte, n)
	if int(off) < len(m.data) {
		copy(out, m.data[off:])
	}
	return out
}

// patternTable is the random source of pattern: copying runs of it keeps
// test data cheap under the race detector, which instruments every byte a
// loop writes but a copy only once.
var patternTable = func() []byte {
	rng := rand.New(rand.NewPCG(42, 42))
	t := make([]byte, 1<<20)
	for i := range t {
		t[i] = byte(rng.Uint32())
	}
	return t
}()

// pattern returns n bytes that differ by seed and offset.
func pattern(seed byte, off uint64, n int) []byte {
	p := make([]byte, n)
	at := int((off + uint64(seed)*104_729) % uint64(len(patternTable)))
	for c := 0; c < n; {
		k := copy(p[c:], patternTable[at:])
		c += k
		at = 0
	}
	return p
}

func newTestStore(t testing.TB, objects object.Store, cfg Config) *Store {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	s := New(objects, cfg)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newMem() *memstore.Store { return memstore.New() }

func mustEqual(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s: mismatch at byte %d (len got %d want %d)", what, i, len(got), len(want))
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
