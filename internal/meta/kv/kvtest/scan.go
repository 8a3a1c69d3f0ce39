package kvtest

import (
	"bytes"
	"sort"
	"testing"

	"shoal/internal/meta/kv"
)

// fill stores key=prefix+suffix with value "v:"+suffix for each suffix and
// returns the expected scan result, sorted.
func fill(t *testing.T, s kv.Store, pfx []byte, suffixes ...string) []pair {
	t.Helper()
	var pairs [][]byte
	var want []pair
	for _, suf := range suffixes {
		k := append(append([]byte(nil), pfx...), suf...)
		pairs = append(pairs, k, []byte("v:"+suf))
		want = append(want, pair{string(k), "v:" + suf})
	}
	set(t, s, pairs...)
	sort.Slice(want, func(i, j int) bool { return want[i].k < want[j].k })
	return want
}

func testScanPrefix(t *testing.T, s kv.Store) {
	want := fill(t, s, prefix('d', 1), "", "b", "a", "c/long/suffix")
	fill(t, s, prefix('d', 0), "zzz")
	fill(t, s, prefix('d', 2), "", "a")
	fill(t, s, prefix('e', 1), "a")
	wantPairs(t, scan(t, s, prefix('d', 1), nil, 0), want)
	wantPairs(t, scan(t, s, prefix('d', 1), []byte{}, -1), want)
	wantPairs(t, scan(t, s, prefix('d', 3), nil, 0), nil)
	// An empty value, and values of any bytes, come back as stored.
	e := prefix('d', 4)
	set(t, s, append(e, "a"...), []byte{}, append(e, "b"...), []byte{0, 0xff, 0})
	wantPairs(t, scan(t, s, e, nil, 0), []pair{{string(e) + "a", ""}, {string(e) + "b", "\x00\xff\x00"}})
}

func testScanAfterLimit(t *testing.T, s kv.Store) {
	p := prefix('l', 42)
	all := fill(t, s, p, "a", "b", "c", "d", "e")
	cases := []struct {
		after string
		limit int
		want  []pair
	}{
		{"", 0, all},
		{"", 2, all[:2]},
		{"a", 2, all[1:3]},
		{"b", 0, all[2:]},
		{"bb", 0, all[2:]},
		{"b", 10, all[2:]},
		{"e", 0, nil},
		{"z", 1, nil},
		{"", 5, all},
		{"", 1, all[:1]},
	}
	for _, c := range cases {
		got := scan(t, s, p, []byte(c.after), c.limit)
		if !equalPairs(got, c.want) {
			t.Errorf("after %q limit %d: got %q, want %q", c.after, c.limit, got, c.want)
		}
	}
}

func testScanBytesOrder(t *testing.T, s kv.Store) {
	p := prefix('b', 0xff)
	all := fill(t, s, p, "", "\x00", "\x00\x00", "\x01", "a", "\x7f", "\x80", "\xff", "\xff\x00", "\xff\xff")
	// Neighbours whose keys sort right next to the prefix's range.
	fill(t, s, prefix('b', 0xfe), "\xff\xff\xff")
	fill(t, s, prefix('b', 0x100), "")
	wantPairs(t, scan(t, s, p, nil, 0), all)
	wantPairs(t, scan(t, s, p, []byte{0x00}, 0), all[2:])
	wantPairs(t, scan(t, s, p, []byte{0xff}, 0), all[8:])
	wantPairs(t, scan(t, s, p, []byte{0x7f}, 2), all[6:8])

	// A prefix of all 0xff bytes has no upper bound key.
	top := bytes.Repeat([]byte{0xff}, kv.ScanPrefixLen)
	topAll := fill(t, s, top, "", "\x00", "\xff", "\xff\xff\xff")
	fill(t, s, append(bytes.Repeat([]byte{0xff}, kv.ScanPrefixLen-1), 0xfe), "\xff")
	wantPairs(t, scan(t, s, top, nil, 0), topAll)
	wantPairs(t, scan(t, s, top, []byte{0xff}, 0), topAll[3:])
}

func testScanEarlyStop(t *testing.T, s kv.Store) {
	p := prefix('s', 5)
	all := fill(t, s, p, "0", "1", "2", "3", "4", "5", "6", "7", "8", "9")
	var got []pair
	err := s.View(ctxFor(t), func(tx kv.Tx) error {
		got = nil
		return tx.Scan(p, nil, 0, func(k, v []byte) bool {
			got = append(got, pair{string(k), string(v)})
			return len(got) < 3
		})
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	wantPairs(t, got, all[:3])
}

func testScanOverlay(t *testing.T, s kv.Store) {
	p := prefix('o', 9)
	fill(t, s, p, "a", "c", "e")
	k := func(suf string) []byte { return append(append([]byte(nil), p...), suf...) }
	var full, paged []pair
	err := s.Txn(ctxFor(t), func(tx kv.Tx) error {
		tx.Set(k("b"), []byte("new:b"))
		tx.Delete(k("c"))
		tx.Set(k("e"), []byte("new:e"))
		tx.Set(k("g"), []byte("new:g"))
		tx.Delete(k("zz")) // absent
		full, paged = nil, nil
		if err := tx.Scan(p, nil, 0, collect(&full)); err != nil {
			return err
		}
		return tx.Scan(p, []byte("a"), 2, collect(&paged))
	})
	if err != nil {
		t.Fatalf("Txn: %v", err)
	}
	want := []pair{{string(k("a")), "v:a"}, {string(k("b")), "new:b"}, {string(k("e")), "new:e"}, {string(k("g")), "new:g"}}
	wantPairs(t, full, want)
	wantPairs(t, paged, want[1:3])
	wantPairs(t, scan(t, s, p, nil, 0), want)
}

func testScanNestedGet(t *testing.T, s kv.Store) {
	p := prefix('n', 1)
	all := fill(t, s, p, "a", "b", "c")
	set(t, s, key('m', 1, "a"), []byte("A"), key('m', 1, "b"), []byte("B"), key('m', 1, "c"), []byte("C"))
	var got []string
	err := s.View(ctxFor(t), func(tx kv.Tx) error {
		got = nil
		return tx.Scan(p, nil, 0, func(k, v []byte) bool {
			other, err := tx.Get(key('m', 1, string(k[len(p):])))
			if err != nil {
				t.Errorf("Get inside Scan: %v", err)
				return false
			}
			got = append(got, string(other))
			return true
		})
	})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	if len(got) != len(all) || got[0] != "A" || got[1] != "B" || got[2] != "C" {
		t.Fatalf("Get inside Scan saw %q, want [A B C]", got)
	}
}

func testScanShortPrefix(t *testing.T, s kv.Store) {
	want := fill(t, s, prefix('S', 1), "", "x")
	want = append(want, fill(t, s, prefix('S', 900), "y")...)
	want = append(want, fill(t, s, []byte{'S', 0}, "short")...)
	other := fill(t, s, prefix('T', 1), "z")
	sortPairs(want)
	got := scan(t, s, []byte{'S'}, nil, 0)
	sortPairs(got)
	wantPairs(t, got, want)

	everything := append(append([]pair(nil), want...), other...)
	sortPairs(everything)
	got = scan(t, s, nil, nil, 0)
	sortPairs(got)
	wantPairs(t, got, everything)
}

// collect returns a Scan callback appending to out.
func collect(out *[]pair) func(k, v []byte) bool {
	return func(k, v []byte) bool {
		*out = append(*out, pair{string(k), string(v)})
		return true
	}
}

func sortPairs(p []pair) { sort.Slice(p, func(i, j int) bool { return p[i].k < p[j].k }) }

func equalPairs(a, b []pair) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
