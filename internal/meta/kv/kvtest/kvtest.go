package kvtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"shoal/internal/meta/kv"
)

// Run runs the whole conformance suite against stores made by newStore.
func Run(t *testing.T, newStore func(t *testing.T) kv.Store, opts ...Option) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	withPeer := func(fn func(t *testing.T, s, peer kv.Store)) func(t *testing.T, s kv.Store) {
		return func(t *testing.T, s kv.Store) { fn(t, s, c.peerOf(t, s)) }
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, s kv.Store)
	}{
		{"GetSetDelete", testGetSetDelete},
		{"EmptyValue", testEmptyValue},
		{"BufferOwnership", testBufferOwnership},
		{"ReadYourWrites", testReadYourWrites},
		{"Rollback", testRollback},
		{"ScanPrefix", testScanPrefix},
		{"ScanAfterLimit", testScanAfterLimit},
		{"ScanBytesOrder", testScanBytesOrder},
		{"ScanEarlyStop", testScanEarlyStop},
		{"ScanOverlay", testScanOverlay},
		{"ScanNestedGet", testScanNestedGet},
		{"ScanShortPrefix", testScanShortPrefix},
		{"ViewRefusesWrites", testViewRefusesWrites},
		{"ViewSnapshot", testViewSnapshot},
		{"CounterIncrements", testCounterIncrements},
		{"TransferInvariant", testTransferInvariant},
		{"NoWriteSkew", testNoWriteSkew},
		{"LargeValues", testLargeValues},
		{"ManyKeysPaged", testManyKeysPaged},
		{"GetMany", testGetMany},
		{"GetOne", testGetOne},
		{"ViewAhead", testViewAhead},
		{"ViewAheadOneState", testViewAheadOneState},
		{"ExclusiveHoldsWritersOff", withPeer(testExclusiveHoldsWritersOff)},
		{"ExclusiveLarge", withPeer(testExclusiveLarge)},
		{"Close", testClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			t.Cleanup(func() { _ = s.Close() })
			tc.fn(t, s)
		})
	}
}

// ctxFor returns a context bounded well below the test timeout, so a
// hung backend fails one subtest instead of the whole binary.
func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// key builds a key with a full ScanPrefixLen prefix: kind byte, 8-byte
// inode number, then suffix.
func key(kind byte, ino uint64, suffix string) []byte {
	k := make([]byte, 0, kv.ScanPrefixLen+len(suffix))
	k = append(k, kind)
	k = binary.BigEndian.AppendUint64(k, ino)
	return append(k, suffix...)
}

// prefix is key without a suffix.
func prefix(kind byte, ino uint64) []byte { return key(kind, ino, "") }

// set writes pairs (key, value, key, value, ...) in one transaction.
func set(t *testing.T, s kv.Store, pairs ...[]byte) {
	t.Helper()
	err := s.Txn(ctxFor(t), func(tx kv.Tx) error {
		for i := 0; i+1 < len(pairs); i += 2 {
			tx.Set(pairs[i], pairs[i+1])
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Txn set: %v", err)
	}
}

// get reads one key in a View.
func get(t *testing.T, s kv.Store, k []byte) []byte {
	t.Helper()
	var v []byte
	err := s.View(ctxFor(t), func(tx kv.Tx) error {
		var err error
		v, err = tx.Get(k)
		return err
	})
	if err != nil {
		t.Fatalf("View get %x: %v", k, err)
	}
	return v
}

// wantValue fails unless key k holds want (nil: absent).
func wantValue(t *testing.T, s kv.Store, k, want []byte) {
	t.Helper()
	got := get(t, s, k)
	if (got == nil) != (want == nil) || !bytes.Equal(got, want) {
		t.Fatalf("key %x = %s, want %s", k, show(got), show(want))
	}
}

// show prints a value for failure messages, marking nil.
func show(v []byte) string {
	if v == nil {
		return "<absent>"
	}
	if len(v) > 32 {
		return fmt.Sprintf("%q...(%d bytes)", v[:32], len(v))
	}
	return fmt.Sprintf("%q", v)
}

// pair is one scanned key and value.
type pair struct{ k, v string }

// scan collects a Scan's results inside a View.
func scan(t *testing.T, s kv.Store, pfx, after []byte, limit int) []pair {
	t.Helper()
	var out []pair
	err := s.View(ctxFor(t), func(tx kv.Tx) error {
		out = out[:0]
		return tx.Scan(pfx, after, limit, func(k, v []byte) bool {
			out = append(out, pair{string(k), string(v)})
			return true
		})
	})
	if err != nil {
		t.Fatalf("Scan %x after %x: %v", pfx, after, err)
	}
	return out
}

// wantPairs fails unless got equals want exactly, in order.
func wantPairs(t *testing.T, got, want []pair) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("scan returned %d pairs, want %d:\n got  %q\n want %q", len(got), len(want), got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("scan pair %d = %q, want %q\n got  %q\n want %q", i, got[i], want[i], got, want)
		}
	}
}
