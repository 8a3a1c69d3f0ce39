package rediskv

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"shoal/internal/meta/kv"
)

// watches counts the WATCH commands a client sends.
type watches struct{ n atomic.Int64 }

func (w *watches) DialHook(next redis.DialHook) redis.DialHook { return next }

func (w *watches) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { w.count(cmd); return next(ctx, cmd) }
}

func (w *watches) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			w.count(c)
		}
		return next(ctx, cmds)
	}
}

func (w *watches) count(c redis.Cmder) {
	if strings.EqualFold(c.Name(), "watch") {
		w.n.Add(1)
	}
}

// shortKeys stores keys shaped like the freed-slice list ('L' and an
// 8-byte id: one "z" set each), a few shorter and longer ones around
// them, and keys of the neighbouring kinds.
func shortKeys(t *testing.T, s kv.Store, n int) {
	t.Helper()
	err := s.Txn(context.Background(), func(tx kv.Tx) error {
		for i := 0; i < n; i++ {
			tx.Set(binary.BigEndian.AppendUint64([]byte("L"), uint64(i*7+1)), []byte(fmt.Sprint("v", i)))
		}
		for _, k := range []string{"L", "La", "Labcdefgh", "Labcdefghij", "Labcdefghik", "Lz", "K1", "Kabcdefghij", "M", "Mabcdefghx"} {
			tx.Set([]byte(k), []byte("w"+k))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

type kvPair struct{ k, v string }

func scanAll(t *testing.T, s kv.Store, view bool, prefix, after []byte, limit int) []kvPair {
	t.Helper()
	var out []kvPair
	run := s.View
	if !view {
		run = s.Txn
	}
	err := run(context.Background(), func(tx kv.Tx) error {
		out = out[:0]
		return tx.Scan(prefix, after, limit, func(k, v []byte) bool {
			out = append(out, kvPair{string(k), string(v)})
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestShortScanViewWatchesNothing: a View's Scan of a short prefix (the
// cleaner's listing of freed slices) is read by one script, WATCHing
// nothing (each WATCH costs Redis a pass over all the connection's
// WATCHes: a listing of n one-key sets cost O(n²)), and returns what the
// WATCHed path (a Txn's) returns, for prefixes, starts and limits that
// cut inside and between the sets.
func TestShortScanViewWatchesNothing(t *testing.T) {
	s := openRedis(t)
	defer s.Close()
	shortKeys(t, s, 600)
	var w watches
	s.(*Store).client.AddHook(&w)
	got := scanAll(t, s, true, []byte("L"), nil, 100000)
	if n := w.n.Load(); n != 0 {
		t.Errorf("a View's Scan of a short prefix sent %d WATCHes, want none", n)
	}
	if len(got) != 600+6 {
		t.Errorf("Scan of L: %d keys, want %d", len(got), 606)
	}
	after8 := binary.BigEndian.AppendUint64(nil, 7*300+1)
	cases := []struct {
		prefix, after string
		limit         int
	}{
		{"L", "", 100000}, {"L", "", 1}, {"L", "", 5}, {"L", "", 300}, {"L", "", 1025},
		{"L", string(after8), 10}, {"L", string(after8[:3]), 7}, {"L", "a", 3}, {"L", "abcdefghij", 2},
		{"La", "", 10}, {"Labcdefg", "", 10}, {"", "", 100000}, {"", "", 2}, {"", "Labcdefghij", 4},
		{"", "Lz", 3}, {"K", "", 10}, {"Q", "", 10},
	}
	for _, c := range cases {
		var after []byte
		if c.after != "" {
			after = []byte(c.after)
		}
		want := scanAll(t, s, false, []byte(c.prefix), after, c.limit)
		got := scanAll(t, s, true, []byte(c.prefix), after, c.limit)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Scan(%q, %q, %d): View %d keys %q..., Txn %d keys", c.prefix, c.after, c.limit, len(got), head(got), len(want))
		}
	}
}

func head(ps []kvPair) []kvPair { return ps[:min(3, len(ps))] }

// TestShortScanViewThenRead: a View that reads on after its script-read
// Scan runs again on the WATCHed path, so that the Scan and the later
// read are of one state even when another client writes in between.
func TestShortScanViewThenRead(t *testing.T) {
	a, b := twoStores(t)
	shortKeys(t, a, 20)
	first := binary.BigEndian.AppendUint64([]byte("L"), 1)
	attempts := 0
	var scanned, read []byte
	err := a.View(context.Background(), func(tx kv.Tx) error {
		attempts++
		scanned = nil
		err := tx.Scan([]byte("L"), nil, 100, func(k, v []byte) bool {
			if bytes.Equal(k, first) {
				scanned = append([]byte{}, v...)
			}
			return true
		})
		if err != nil {
			return err
		}
		if attempts == 1 {
			setKey(t, b, string(first), "changed")
		}
		read, err = tx.Get(first)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(scanned) != "changed" || string(read) != "changed" {
		t.Errorf("after %d attempts the Scan saw %q and the Get %q, want both %q", attempts, scanned, read, "changed")
	}
	if attempts != 2 {
		t.Errorf("%d attempts, want 2 (the script's, then the WATCHed one)", attempts)
	}
}

// TestBigGetManyViewWatchesNothing: a View whose first read is a GetMany
// of more than maxChecks keys (a mount's flush reads 1024 orphan marks at
// a time) reads them in one MGET, WATCHing nothing, and sees every value;
// if it reads on, it runs again on the WATCHed path, so that both reads
// are of one state even when another client writes in between.
func TestBigGetManyViewWatchesNothing(t *testing.T) {
	a, b := twoStores(t)
	const n = 1024
	keys := make([][]byte, n)
	err := a.Txn(context.Background(), func(tx kv.Tx) error {
		for i := range keys {
			keys[i] = binary.BigEndian.AppendUint64([]byte("O"), uint64(i*3+1))
			if i%2 == 0 {
				tx.Set(keys[i], []byte(fmt.Sprint("v", i)))
			}
		}
		tx.Set([]byte("P"), []byte("p"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var w watches
	a.(*Store).client.AddHook(&w)
	var vals [][]byte
	if err := a.View(context.Background(), func(tx kv.Tx) (err error) {
		vals, err = kv.GetMany(tx, keys)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n := w.n.Load(); n != 0 {
		t.Errorf("a View's one GetMany of %d keys sent %d WATCHes, want none", len(keys), n)
	}
	for i, v := range vals {
		if want := fmt.Sprint("v", i); i%2 == 0 && string(v) != want || i%2 == 1 && v != nil {
			t.Fatalf("key %d: %q", i, v)
		}
	}

	attempts := 0
	var first, read []byte
	err = a.View(context.Background(), func(tx kv.Tx) error {
		attempts++
		vals, err := kv.GetMany(tx, keys)
		if err != nil {
			return err
		}
		first = vals[0]
		if attempts == 1 {
			setKey(t, b, string(keys[0]), "changed")
		}
		read, err = tx.Get([]byte("P")) // not read yet: a second round
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(first) != "changed" || string(read) != "p" {
		t.Errorf("after %d attempts the GetMany saw %q and the Get %q, want %q and %q", attempts, first, read, "changed", "p")
	}
	if attempts != 2 {
		t.Errorf("%d attempts, want 2 (the plain MGET's, then the WATCHed one)", attempts)
	}
}

// TestSnappedViewThenShortScan: a View whose earlier round was read at one
// instant without WATCHes or checks (a plain MGET of many keys, or a
// short Scan by script) and which then Scans a short prefix does not get
// the Scan from a later instant: the attempt ends as a conflict and the
// retry reads both at one state, even when another client changed both
// in between.
func TestSnappedViewThenShortScan(t *testing.T) {
	for _, first := range []string{"GetMany", "Scan"} {
		t.Run(first, func(t *testing.T) {
			a, b := twoStores(t)
			keys := make([][]byte, 64)
			set := func(s kv.Store, v string) {
				t.Helper()
				err := s.Txn(context.Background(), func(tx kv.Tx) error {
					for i := range keys {
						keys[i] = binary.BigEndian.AppendUint64([]byte("O"), uint64(i+1))
						tx.Set(keys[i], []byte(v))
					}
					tx.Set([]byte("Qx"), []byte(v))
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			set(a, "old")
			attempts := 0
			var firstSaw, scanSaw string
			err := a.View(context.Background(), func(tx kv.Tx) error {
				attempts++
				if first == "GetMany" {
					vals, err := kv.GetMany(tx, keys)
					if err != nil {
						return err
					}
					firstSaw = string(vals[0])
				} else {
					err := tx.Scan([]byte("O"), nil, 100, func(k, v []byte) bool { firstSaw = string(v); return false })
					if err != nil {
						return err
					}
				}
				if attempts == 1 {
					set(b, "new")
				}
				return tx.Scan([]byte("Q"), nil, 10, func(k, v []byte) bool { scanSaw = string(v); return true })
			})
			if err != nil {
				t.Fatal(err)
			}
			if firstSaw != scanSaw {
				t.Errorf("after %d attempts the View's %s saw %q and its Scan %q: two instants", attempts, first, firstSaw, scanSaw)
			}
		})
	}
}
