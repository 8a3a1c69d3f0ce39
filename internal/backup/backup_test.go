package backup_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"shoal/internal/backup"
	"shoal/internal/meta"
	"shoal/internal/meta/kv/memkv"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/object"
	"shoal/internal/object/memstore"
)

func newEngine(t *testing.T, format bool) *kvmeta.Engine {
	eng := kvmeta.New(memkv.New(), kvmeta.Options{})
	t.Cleanup(func() { eng.Close() })
	if format {
		f := meta.Format{Name: "bk", Version: meta.CurrentFormatVersion, Storage: "mem", BlockSize: 1 << 20}
		if err := eng.Format(context.Background(), f, false); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"a", "b", "c"} {
			_, err := eng.Mknod(context.Background(), meta.MknodRequest{Parent: meta.RootIno, Name: name, Type: meta.TypeFile, Mode: 0o600})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return eng
}

func dump(t *testing.T, eng *kvmeta.Engine) string {
	var b bytes.Buffer
	if err := eng.Dump(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestOnceRestores stores a backup and loads it into an empty engine.
func TestOnceRestores(t *testing.T) {
	ctx := context.Background()
	eng, store := newEngine(t, true), memstore.New()
	key, err := backup.Once(ctx, eng, store)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := backup.ParseKey(key); !ok {
		t.Fatalf("key %q does not parse", key)
	}
	rc, err := store.Get(ctx, key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	r, err := backup.Decompress(rc)
	if err != nil {
		t.Fatal(err)
	}
	fresh := newEngine(t, false)
	if err := fresh.Restore(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got, want := dump(t, fresh), dump(t, eng); got != want {
		t.Errorf("restored dump differs:\n%s\nwant\n%s", got, want)
	}
}

// TestRunKeepsNewest runs the loop with a short interval and checks the
// retention.
func TestRunKeepsNewest(t *testing.T) {
	eng, store := newEngine(t, true), memstore.New()
	// Backups from the past, older than the retention keeps.
	for i := range 4 {
		key := backup.Key(time.Now().Add(-time.Duration(10-i) * time.Hour))
		if err := store.Put(context.Background(), key, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	_ = store.Put(context.Background(), backup.Prefix+"notes.txt", strings.NewReader("x"), 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	if err := backup.Run(ctx, eng, store, time.Second, 3, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	list, err := backup.List(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Fatalf("%d backups kept, want 3: %v", len(list), list)
	}
	if t0, _ := backup.ParseKey(list[2].Key); time.Since(t0) > 5*time.Second {
		t.Errorf("newest backup %s is not from this run", list[2].Key)
	}
	if _, err := store.Head(context.Background(), backup.Prefix+"notes.txt"); err != nil {
		t.Errorf("prune deleted a foreign key: %v", err)
	}
}

// TestCompressRoundTrip checks each compression by name and sniffing.
func TestCompressRoundTrip(t *testing.T) {
	payload := strings.Repeat("shoal dump line\n", 1000)
	for _, name := range []string{"x.dump", "x.dump.gz", "x.dump.zst"} {
		var b bytes.Buffer
		w, err := backup.Compress(&b, name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, payload)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if name != "x.dump" && b.Len() >= len(payload) {
			t.Errorf("%s: not compressed (%d bytes)", name, b.Len())
		}
		r, err := backup.Decompress(&b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil || string(got) != payload {
			t.Errorf("%s: round trip: %v, %d bytes", name, err, len(got))
		}
	}
}

var _ object.Store = memstore.New()

func TestStartStop(t *testing.T) {
	eng, store := newEngine(t, true), memstore.New()
	stop := backup.Start(eng, store, time.Hour, 2, slog.New(slog.NewTextHandler(io.Discard, nil)))
	deadline := time.Now().Add(5 * time.Second)
	for {
		list, _ := backup.List(context.Background(), store)
		if len(list) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no backup within 5s of Start on a store without backups")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	if backup.IntervalFor("sqlite:///x/meta.db") != backup.DefaultInterval || backup.IntervalFor("postgres://h/db") != 0 {
		t.Error("IntervalFor")
	}
}
