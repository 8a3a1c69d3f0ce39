package objopen

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"shoal/internal/object"
	"shoal/internal/object/filestore"
	"shoal/internal/object/memstore"
	"shoal/internal/object/s3store"
)

func TestOpenKinds(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "bucket")
	s, err := Open(ctx, "file", dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*filestore.Store); !ok {
		t.Fatalf("file: got %T", s)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("file store did not create %s: %v", dir, err)
	}
	s, err = Open(ctx, "s3", "http://127.0.0.1:1/bucket")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*s3store.Store); !ok {
		t.Fatalf("s3: got %T", s)
	}
	if _, ok := s.(Checker); !ok {
		t.Fatal("s3 store is not a Checker")
	}
}

func TestOpenMemShared(t *testing.T) {
	ctx := context.Background()
	a, _ := Open(ctx, "mem", t.Name())
	b, _ := Open(ctx, "mem", t.Name())
	other, _ := Open(ctx, "mem", t.Name()+"-other")
	if _, ok := a.(*memstore.Store); !ok {
		t.Fatalf("mem: got %T", a)
	}
	if err := a.Put(ctx, "k", strings.NewReader("v"), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Head(ctx, "k"); err != nil {
		t.Fatalf("same name does not share: %v", err)
	}
	if _, err := other.Head(ctx, "k"); err == nil {
		t.Fatal("different names share")
	}
	var _ object.Store = a
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	_, err := Open(ctx, "ceph", "x")
	if err == nil || !strings.Contains(err.Error(), "file, mem, s3") {
		t.Fatalf("unknown kind: %v, want the list of kinds", err)
	}
	if _, err := Open(ctx, "file", ""); err == nil {
		t.Fatal("file with no directory succeeded")
	}
	if _, err := Open(ctx, "s3", "ftp://x/y"); err == nil {
		t.Fatal("s3 with a bad URL succeeded")
	}
}
