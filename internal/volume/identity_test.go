package volume

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"shoal/internal/identity"
	"shoal/internal/meta"
	"shoal/internal/object/objopen"
)

// TestFormatClaimsItsBucket: format claims the bucket; a second volume
// formatted into it is refused; re-formatting the same volume keeps its
// uuid (its claim stays valid).
func TestFormatClaimsItsBucket(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bucket := filepath.Join(dir, "bucket")
	a, err := Format(ctx, "sqlite://"+filepath.Join(dir, "a.db"), FormatOptions{Bucket: bucket})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Format(ctx, "sqlite://"+filepath.Join(dir, "b.db"), FormatOptions{Bucket: bucket}); err == nil || !strings.Contains(err.Error(), "claimed by another volume") {
		t.Fatalf("second volume in one bucket: %v", err)
	}
	again, err := Format(ctx, "sqlite://"+filepath.Join(dir, "a.db"), FormatOptions{Bucket: bucket, Force: true, Name: "renamed"})
	if err != nil || again.UUID != a.UUID {
		t.Fatalf("format --force: %v, uuid %s, want %s", err, again.UUID, a.UUID)
	}
	v, err := Open(ctx, "sqlite://"+filepath.Join(dir, "a.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestAdopt: a load is a copy with its own uuid that shares the bucket;
// a load --replace releases the source's claim, so the source's engine
// can no longer open the volume.
func TestAdopt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := "sqlite://" + filepath.Join(dir, "src.db")
	f, err := Format(ctx, src, FormatOptions{Bucket: filepath.Join(dir, "bucket")})
	if err != nil {
		t.Fatal(err)
	}
	dump := dumpOf(t, src)
	cp := load(t, "sqlite://"+filepath.Join(dir, "copy.db"), dump, LoadCopy)
	if cp.Format.UUID == f.UUID || cp.Source != f.UUID || len(cp.Claims) != 2 {
		t.Fatalf("copy: %+v", cp)
	}
	store, err := objopen.Open(ctx, f.Storage, f.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := identity.Exclusive(ctx, store, f); err == nil {
		t.Fatal("the source deletes from a bucket its copy shares")
	}
	rp := load(t, "sqlite://"+filepath.Join(dir, "replace.db"), dump, LoadReplace)
	if len(rp.Claims) != 2 || rp.Claims[0].UUID != cp.Format.UUID || rp.Claims[1].UUID != rp.Format.UUID {
		t.Fatalf("replace: claims %+v, want the copy's and the replacement's", rp.Claims)
	}
	if _, err := Open(ctx, src, Options{}); err == nil || !strings.Contains(err.Error(), identity.ErrNotClaimant.Error()) {
		t.Fatalf("opening the replaced source: %v", err)
	}
}

func dumpOf(t *testing.T, metaURL string) []byte {
	t.Helper()
	eng, _, err := Load(context.Background(), metaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	var buf bytes.Buffer
	if err := eng.(meta.Dumper).Dump(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func load(t *testing.T, metaURL string, dump []byte, mode LoadMode) Adopted {
	t.Helper()
	ctx := context.Background()
	eng, err := OpenEngine(ctx, metaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if err := eng.(meta.Dumper).Restore(ctx, bytes.NewReader(dump)); err != nil {
		t.Fatal(err)
	}
	a, err := Adopt(ctx, eng, mode)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
