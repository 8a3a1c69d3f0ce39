package kvtest

import (
	"bytes"
	"errors"
	"testing"

	"shoal/internal/meta/kv"
)

// testGetOne checks kv.GetOne (the backend's PointReader, if any) against
// committed state: absent, present but empty, a value, and the value after
// a later transaction changed and then deleted it.
func testGetOne(t *testing.T, s kv.Store) {
	ctx := ctxFor(t)
	k, empty := key('G', 1, "one"), key('G', 1, "empty")
	check := func(k, want []byte, when string) {
		t.Helper()
		got, err := kv.GetOne(ctx, s, k)
		if err != nil {
			t.Fatalf("%s: GetOne(%q): %v", when, k, err)
		}
		if (got == nil) != (want == nil) || !bytes.Equal(got, want) {
			t.Fatalf("%s: GetOne(%q) = %s, want %s", when, k, show(got), show(want))
		}
	}
	check(k, nil, "absent")
	set(t, s, k, []byte("v1"), empty, []byte{})
	check(k, []byte("v1"), "after set")
	check(empty, []byte{}, "empty value")
	set(t, s, k, []byte("v2"))
	check(k, []byte("v2"), "after update")
	if err := s.Txn(ctx, func(tx kv.Tx) error { tx.Delete(k); return nil }); err != nil {
		t.Fatal(err)
	}
	check(k, nil, "after delete")
	// A failed transaction's write is not visible.
	errRollback := errors.New("roll back")
	if err := s.Txn(ctx, func(tx kv.Tx) error {
		tx.Set(k, []byte("rolled back"))
		return errRollback
	}); !errors.Is(err, errRollback) {
		t.Fatalf("failing Txn = %v, want its error", err)
	}
	check(k, nil, "after rollback")
}
