package rediskv

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"shoal/internal/meta/kv"
)

// betweenRounds runs change once, right after the pipeline of bigAhead
// that WATCHes the page's sorted set and reads its members, before the
// MULTI that reads their values; it records whether a MULTI carried an
// MGET of the page (the page was read without per-key Lua).
type betweenRounds struct {
	zkey   string
	change func()
	once   sync.Once
	mu     sync.Mutex
	multi  bool
}

func (h *betweenRounds) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h *betweenRounds) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *betweenRounds) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if len(cmds) > 0 && cmds[0].Name() == "multi" {
			for _, c := range cmds {
				if c.Name() == "mget" {
					h.mu.Lock()
					h.multi = true
					h.mu.Unlock()
				}
			}
		}
		if len(cmds) == 2 && cmds[0].Name() == "watch" && cmds[1].Name() == "zrangebylex" && fmt.Sprint(cmds[0].Args()[1]) == h.zkey {
			h.once.Do(h.change)
		}
		return err
	}
}

// bigFixture stores dir = "d1" and a range of n entries P..."e%04d" valued
// "v1", and returns the range's prefix.
func bigFixture(t *testing.T, s kv.Store, dir []byte, n int) []byte {
	t.Helper()
	prefix := []byte("Pbigpage-")
	err := s.Txn(context.Background(), func(tx kv.Tx) error {
		tx.Set(dir, []byte("d1"))
		for i := range n {
			tx.Set(append(append([]byte{}, prefix...), fmt.Sprintf("e%04d", i)...), []byte("v1"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return prefix
}

// TestPrefetchScanBigPage reads ahead a page of more entries than the
// script probes (names only), from the start of the range or after its
// first key, with another client's transaction landing
// between the read of the page's members and the read of their values:
// none; a value changed with dir; an entry created with dir changed (as a
// create changes its directory); an entry deleted; and a key fn read
// before the page (a check) changed. fn must see one state, the new one
// (the values were read after the change), entirely: a create or delete
// meanwhile makes the script read the page afresh, and a changed check
// makes fn run again.
func TestPrefetchScanBigPage(t *testing.T) {
	const n = aheadProbe + 60
	entry := func(prefix []byte, i string) []byte { return append(append([]byte{}, prefix...), i...) }
	cases := []struct {
		name   string
		change func(o kv.Tx, prefix []byte)
		want   string // dir, entries' count, entry e0005, entry e0100a, before-key
		runs   int
	}{
		{"none", nil, "d1 316 v1 - b1", 1},
		{"value", func(o kv.Tx, p []byte) {
			o.Set(entry(p, "e0005"), []byte("v2"))
			o.Set([]byte("ahead-dir"), []byte("d2"))
		}, "d2 316 v2 - b1", 1},
		{"create", func(o kv.Tx, p []byte) {
			o.Set(entry(p, "e0100a"), []byte("vn"))
			o.Set([]byte("ahead-dir"), []byte("d2"))
		}, "d2 317 v1 vn b1", 1},
		{"delete", func(o kv.Tx, p []byte) { o.Delete(entry(p, "e0005")); o.Set([]byte("ahead-dir"), []byte("d2")) }, "d2 315 - - b1", 1},
		{"check", func(o kv.Tx, p []byte) { o.Set([]byte("ahead-before"), []byte("b2")) }, "d1 316 v1 - b2", 2},
	}
	for _, after := range []string{"", "e0000"} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("after=%q/%s", after, c.name), func(t *testing.T) {
				s := openRedis(t)
				defer s.Close()
				ctx := context.Background()
				dir := []byte("ahead-dir")
				prefix := bigFixture(t, s, dir, n)
				setKey(t, s, "ahead-before", "b1")
				h := &betweenRounds{zkey: s.(*Store).keys.zset(prefix), change: func() {}}
				if c.change != nil {
					h.change = func() {
						if err := s.Txn(ctx, func(o kv.Tx) error { c.change(o, prefix); return nil }); err != nil {
							t.Errorf("concurrent writer: %v", err)
						}
					}
				}
				s.(*Store).client.AddHook(h)
				var seen []string
				runs := 0
				err := s.View(ctx, func(tx kv.Tx) error {
					runs++
					before, err := tx.Get([]byte("ahead-before"))
					if err != nil {
						return err
					}
					if err := kv.PrefetchScan(tx, kv.ScanAhead{Prefix: prefix, After: []byte(after), Limit: 1000}, dir); err != nil {
						return err
					}
					got := map[string]string{}
					count := 0
					if after != "" {
						count++ // e0000, before the range
					}
					err = tx.Scan(prefix, []byte(after), 1000, func(k, v []byte) bool {
						got[string(k[len(prefix):])] = string(v)
						count++
						return true
					})
					if err != nil {
						return err
					}
					d, err := tx.Get(dir)
					if err != nil {
						return err
					}
					val := func(name string) string {
						if v, ok := got[name]; ok {
							return v
						}
						return "-"
					}
					seen = append(seen, fmt.Sprintf("%s %d %s %s %s", d, count, val("e0005"), val("e0100a"), before))
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if got := strings.Join(seen, "\n"); got != c.want || runs != c.runs {
					t.Fatalf("fn ran %d times and saw %q at the end; want %d, %q", runs, got, c.runs, c.want)
				}
				h.mu.Lock()
				defer h.mu.Unlock()
				if !h.multi {
					t.Errorf("the page of %d entries was not read by MULTI/MGET", n)
				}
			})
		}
	}
}
