package filestore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/object"
)

// syncLog records testHookSynced calls, in order, until the test ends.
func syncLog(t *testing.T) func() []string {
	var mu sync.Mutex
	var log []string
	testHookSynced = func(p string) { mu.Lock(); log = append(log, p); mu.Unlock() }
	t.Cleanup(func() { testHookSynced = nil })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), log...)
	}
}

// TestPrepareDurable checks that Prepare makes each key an empty file and
// returns only once every file and then its directory were synced: a Put
// into a prepared file syncs nothing but the file, so the name must be
// durable before the key is handed out.
func TestPrepareDurable(t *testing.T) {
	s := newStore(t)
	synced := syncLog(t)
	keys := []string{"chunks/0/0/1_0_10", "chunks/0/0/2_0_10", "chunks/0/1/1000_0_10"}
	got := s.Prepare(context.Background(), keys, 0)
	if len(got) != len(keys) {
		t.Fatalf("Prepare = %v, want %v", got, keys)
	}
	log := synced()
	at := map[string]int{}
	for i, p := range log {
		at[p] = i
	}
	for _, k := range keys {
		path := filepath.Join(s.Root(), k)
		fi, err := os.Stat(path)
		if err != nil || fi.Size() != 0 {
			t.Fatalf("%s after Prepare: %v, %v; want an empty file", k, fi, err)
		}
		f, okf := at[path]
		d, okd := at[filepath.Dir(path)]
		if !okf || !okd || f > d {
			t.Errorf("%s: synced %v; want the file, then its directory", k, log)
		}
	}
}

// TestNamedPut checks that a fresh Put of a prepared key writes into the
// prepared file (no spare, no new file) and returns once it is synced,
// with exactly its bytes; and that the key is taken once: a second
// Prepare of it fails and a Put of an unprepared key takes the usual path.
func TestNamedPut(t *testing.T) {
	s := newStore(t)
	ctx := object.WithFreshKey(context.Background())
	key := "chunks/0/0/7_0_4"
	path := filepath.Join(s.Root(), key)
	if got := s.Prepare(context.Background(), []string{key}, 0); len(got) != 1 {
		t.Fatalf("Prepare = %v", got)
	}
	before, _ := os.Stat(path)
	synced := syncLog(t)
	var used []string
	testHookNamedUsed = func(p string) { used = append(used, p) }
	t.Cleanup(func() { testHookNamedUsed = nil })
	if err := s.Put(ctx, key, strings.NewReader("data"), 4); err != nil {
		t.Fatal(err)
	}
	if len(used) != 1 || used[0] != path {
		t.Errorf("named Puts %v, want %s", used, path)
	}
	if log := synced(); len(log) != 1 || log[0] != path {
		t.Errorf("synced %v, want just the object", log)
	}
	after, _ := os.Stat(path)
	if !os.SameFile(before, after) {
		t.Error("the Put replaced the prepared file instead of writing into it")
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "data" {
		t.Errorf("object = %q, %v", b, err)
	}
	if got := s.Prepare(context.Background(), []string{key}, 0); len(got) != 0 {
		t.Errorf("Prepare of an existing object = %v, want nothing", got)
	}
}

// TestNamedRemovedUnderPut checks that a prepared object removed while a
// Put writes it (gc with a short grace) fails the Put, rather than leave
// a block that only the Put's descriptor held, and that one removed
// before the Put is created anew.
func TestNamedRemovedUnderPut(t *testing.T) {
	s := newStore(t)
	ctx := object.WithFreshKey(context.Background())
	keys := []string{"chunks/0/0/1_0_1", "chunks/0/0/2_0_1"}
	s.Prepare(context.Background(), keys, 0)
	first := filepath.Join(s.Root(), keys[0])
	testHookSynced = func(p string) {
		if p == first {
			os.Remove(p)
		}
	}
	t.Cleanup(func() { testHookSynced = nil })
	if err := s.Put(ctx, keys[0], strings.NewReader("x"), 1); err == nil {
		t.Error("Put into a prepared object removed under it succeeded")
	}
	second := filepath.Join(s.Root(), keys[1])
	os.Remove(second)
	if err := s.Put(ctx, keys[1], strings.NewReader("y"), 1); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(second); err != nil || string(b) != "y" {
		t.Errorf("object = %q, %v", b, err)
	}
}

// TestNamedTooOld checks that a prepared object older than namedMaxAge
// is not written into (gc may be about to take it) but made anew, and
// that Unprepare and Delete remove prepared objects.
func TestNamedTooOld(t *testing.T) {
	s := newStore(t)
	ctx := object.WithFreshKey(context.Background())
	keys := []string{"chunks/0/0/1_0_1", "chunks/0/0/2_0_1", "chunks/0/0/3_0_1"}
	s.Prepare(context.Background(), keys, 0)
	old := filepath.Join(s.Root(), keys[0])
	s.named.mu.Lock()
	s.named.paths[old] = preparedObject{made: time.Now().Add(-namedMaxAge)}
	s.named.mu.Unlock()
	used := false
	testHookNamedUsed = func(string) { used = true }
	t.Cleanup(func() { testHookNamedUsed = nil })
	if err := s.Put(ctx, keys[0], strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if used {
		t.Error("a prepared object past namedMaxAge was written into")
	}
	if b, err := os.ReadFile(old); err != nil || string(b) != "x" {
		t.Errorf("object = %q, %v", b, err)
	}
	s.Unprepare(keys[1:2])
	if err := s.Delete(context.Background(), keys[2]); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys[1:] {
		if _, err := os.Stat(filepath.Join(s.Root(), k)); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want it gone", k, err)
		}
	}
	if len(s.named.paths) != 0 {
		t.Errorf("named set %v, want empty", s.named.paths)
	}
}

// TestNamedPutLater checks a fresh Put of a prepared key whose
// durability a SyncBatch takes (data/gated.go): it writes into the
// prepared file and returns before any sync, the batch's Sync then
// syncs the object (and nothing else) and checks its name; a removed
// object fails the Sync, and an unprepared key takes the batch's usual
// path (a synced temporary file renamed, the directory synced later).
func TestNamedPutLater(t *testing.T) {
	s := newStore(t)
	keys := []string{"chunks/0/0/7_0_4", "chunks/0/0/8_0_4"}
	if got := s.Prepare(context.Background(), keys, 0); len(got) != 2 {
		t.Fatalf("Prepare = %v", got)
	}
	synced := syncLog(t)
	var used []string
	testHookNamedUsed = func(p string) { used = append(used, p) }
	t.Cleanup(func() { testHookNamedUsed = nil })
	var b object.SyncBatch
	ctx := object.WithSyncBatch(object.WithFreshKey(context.Background()), &b)
	path := filepath.Join(s.Root(), keys[0])
	before, _ := os.Stat(path)
	if err := s.Put(ctx, keys[0], strings.NewReader("data"), 4); err != nil {
		t.Fatal(err)
	}
	if log := synced(); len(log) != 0 || len(used) != 0 || b.Pending() != 1 {
		t.Fatalf("after the Put: synced %v, used %v, %d pending; want nothing synced and one sync left to the batch", log, used, b.Pending())
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if log := synced(); len(log) != 1 || log[0] != path || len(used) != 1 {
		t.Errorf("after Sync: synced %v, used %v; want just the object", log, used)
	}
	after, _ := os.Stat(path)
	if !os.SameFile(before, after) {
		t.Error("the Put replaced the prepared file instead of writing into it")
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "data" {
		t.Errorf("object = %q, %v", got, err)
	}

	second := filepath.Join(s.Root(), keys[1])
	if err := s.Put(ctx, keys[1], strings.NewReader("gone"), 4); err != nil {
		t.Fatal(err)
	}
	os.Remove(second) // gc with a grace too short, under the Put
	if err := b.Sync(); err == nil {
		t.Error("Sync of an object removed under its Put succeeded")
	}

	other := "chunks/0/0/9_0_4"
	if err := s.Put(ctx, other, strings.NewReader("else"), 4); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(s.Root(), other)); err != nil || string(got) != "else" {
		t.Errorf("unprepared object = %q, %v", got, err)
	}
}

// TestPrepareAllocation checks the space Prepare allocates for each
// object: the size of the latest Put into an object prepared with the
// same size hint, or the hint itself before there was one; so keys of
// different sizes prepared side by side (the data layer's classes) are
// each given what their own Puts take, not the latest Put's size.
func TestPrepareAllocation(t *testing.T) {
	s := newStore(t)
	ctx := object.WithFreshKey(context.Background())
	allocated := func(key string) int64 {
		t.Helper()
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(s.Root(), key), &st); err != nil {
			t.Fatal(err)
		}
		return st.Blocks * 512
	}
	s.Prepare(context.Background(), []string{"chunks/0/0/1_0_4096"}, 4096)
	if got := allocated("chunks/0/0/1_0_4096"); got != 4096 {
		t.Skipf("the file system allocated %d bytes for 4096 (no fallocate?)", got)
	}
	put := func(key string, size int) {
		t.Helper()
		if err := s.Put(ctx, key, strings.NewReader(strings.Repeat("x", size)), int64(size)); err != nil {
			t.Fatal(err)
		}
	}
	put("chunks/0/0/1_0_4096", 4096+32) // a wrapper's header on top
	s.Prepare(context.Background(), []string{"chunks/0/0/2_0_8192"}, 8192)
	put("chunks/0/0/2_0_8192", 8192+32)
	s.Prepare(context.Background(), []string{"chunks/0/0/3_0_4096", "chunks/0/0/4_0_16384"}, 0)
	s.Prepare(context.Background(), []string{"chunks/0/0/5_0_4096"}, 4096)
	s.Prepare(context.Background(), []string{"chunks/0/0/6_0_16384"}, 16384)
	// A class above the spare files' size: its Puts' size is kept too.
	s.Prepare(context.Background(), []string{"chunks/0/0/7_0_65536"}, 65536)
	put("chunks/0/0/7_0_65536", 65536+32)
	s.Prepare(context.Background(), []string{"chunks/0/0/8_0_65536"}, 65536)
	for key, want := range map[string]int64{"chunks/0/0/5_0_4096": 8192, "chunks/0/0/6_0_16384": 16384, "chunks/0/0/4_0_16384": 0, "chunks/0/0/8_0_65536": 69632} {
		if got := allocated(key); got != want {
			t.Errorf("%s: %d bytes allocated, want %d", key, got, want)
		}
	}
}
