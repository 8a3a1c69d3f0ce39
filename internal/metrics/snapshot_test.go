package metrics

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"shoal/internal/data"
	"shoal/internal/meta"
	"shoal/internal/object"
	"shoal/internal/object/memstore"
	"shoal/internal/vfs"
)

// TestSnapshotAndParse: what the instruments recorded comes back the same
// from Snapshot and from parsing a scrape of the handler.
func TestSnapshotAndParse(t *testing.T) {
	r := New([]string{"lookup", "write"})
	r.Op(0, time.Millisecond, false)
	r.Op(0, 3*time.Millisecond, true)
	r.Op(1, time.Millisecond, false)
	r.Op(7, time.Millisecond, false) // unknown: ignored
	r.Written(4096)
	r.Read(100)
	r.Watch(Sources{
		Data: func() data.Stats {
			return data.Stats{CacheHits: 3, CacheMisses: 1, BufferUsed: 10, BufferLimit: 20, BytesFetched: 7, BlocksPut: 4, PutFailures: 1}
		},
		VFS: func() vfs.Stats {
			return vfs.Stats{OpenFiles: 2, OpenHandles: 3, LockedFiles: 1, HeartbeatAge: 2 * time.Second}
		},
		Engine: func() meta.TxnStats { return meta.TxnStats{Updates: 5, Views: 9, Retries: 2, UpdateTime: time.Second} },
	})
	store := r.Objects(memstore.New())
	ctx := context.Background()
	if err := store.Put(ctx, "k", strings.NewReader("abc"), 3); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Head(ctx, "missing"); !errors.Is(err, object.ErrNotExist) {
		t.Fatal(err)
	}
	r.ObjectRetry("put", 250*time.Millisecond)
	r.ObjectRetry("put", 500*time.Millisecond)
	r.ObjectRetry("copy", time.Second) // unknown: ignored
	want := func(t *testing.T, s Snapshot) {
		t.Helper()
		if got := s.Ops["lookup"]; got.Count != 2 || got.Errors != 1 || got.Seconds < 0.0039 || got.Seconds > 0.0041 {
			t.Errorf("lookup = %+v", got)
		}
		if s.Ops["write"].Count != 1 || s.WrittenBytes != 4096 || s.ReadBytes != 100 {
			t.Errorf("write = %+v, bytes %d/%d", s.Ops["write"], s.WrittenBytes, s.ReadBytes)
		}
		if s.Objects["put"].Count != 1 || s.Objects["head"] != (OpTotals{Count: 1, Seconds: s.Objects["head"].Seconds}) || s.PutBytes != 3 {
			t.Errorf("objects = %+v, put bytes %d", s.Objects, s.PutBytes)
		}
		if s.Engine.Updates != 5 || s.Engine.Views != 9 || s.Engine.Retries != 2 || s.Engine.UpdateSeconds != 1 {
			t.Errorf("engine = %+v", s.Engine)
		}
		if put := s.Objects["put"]; put.Retries != 2 || put.Backoff != 0.75 || s.Objects["head"].Retries != 0 {
			t.Errorf("object retries = %+v", s.Objects)
		}
		if s.BlocksPut != 4 || s.PutFailures != 1 {
			t.Errorf("blocks put %d, failed %d", s.BlocksPut, s.PutFailures)
		}
		if s.CacheHits != 3 || s.CacheMisses != 1 || s.BufferBytes != 10 || s.BufferLimit != 20 || s.FetchedBytes != 7 {
			t.Errorf("data = %+v", s)
		}
		if s.OpenFiles != 2 || s.OpenHandles != 3 || s.LockedFiles != 1 || s.HeartbeatAge != 2 {
			t.Errorf("vfs = %+v", s)
		}
	}
	s, err := r.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	want(t, s)
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	parsed, err := Parse(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	want(t, parsed)
}
