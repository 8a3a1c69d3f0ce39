package rediskv

import (
	"bytes"
	"errors"

	"github.com/redis/go-redis/v9"

	"shoal/internal/meta/kv"
)

// shortSource yields the keys of a prefix shorter than kv.ScanPrefixLen
// (admin scans: a whole key kind, or everything): it walks the "d" set of
// each first byte in range, in order, and expands every 8-byte member (a
// 9-byte key prefix) into its "z" set. Every set it reads is WATCHed, so a
// Scan here is as serializable as one of a long prefix, only coarser: any
// new or vanished key prefix of that first byte conflicts with it.
type shortSource struct {
	t     *tx
	r     scanRange
	first int    // first byte whose "d" set is being walked
	last  int    // last first byte in range
	dMin  string // ZRANGEBYLEX lower bound for the next "d" members
	dMax  string
	dDone bool        // the current "d" set is exhausted
	inner *zsetSource // the "z" set being expanded, if any
	queue [][]byte    // "d" members read but not yet expanded
}

func newShortSource(t *tx, r scanRange) *shortSource {
	s := &shortSource{t: t, r: r, first: 0, last: 0xff, dMax: "+"}
	if len(r.prefix) > 0 {
		s.first, s.last = int(r.prefix[0]), int(r.prefix[0])
		s.dMax = lexBelow(r.prefix[1:])
	}
	s.dMin = "-"
	if len(r.lo) > 0 {
		s.first = int(r.lo[0])
		s.dMin = lexFrom(r.lo[1:min(len(r.lo), kv.ScanPrefixLen)], true)
	}
	return s
}

// next returns up to n keys; it may return fewer (even none) before the
// range is exhausted, which the merger handles by asking again.
func (s *shortSource) next(n int) ([][]byte, bool, error) {
	for {
		if s.inner != nil {
			keys, done, err := s.inner.next(n)
			if done {
				s.inner = nil
			}
			if err != nil || len(keys) > 0 {
				return s.filter(keys), false, err
			}
			continue
		}
		if keys := s.takeShort(n); len(keys) > 0 {
			return keys, false, nil
		}
		if len(s.queue) > 0 {
			keys, err := s.expandBatch(n)
			if err != nil || len(keys) > 0 {
				return keys, false, err
			}
			continue
		}
		if done, err := s.readDir(n); done || err != nil {
			return nil, done, err
		}
	}
}

// takeShort takes the short keys (under 9 bytes) at the head of the queue,
// up to n, stopping at the first 9-byte prefix.
func (s *shortSource) takeShort(n int) [][]byte {
	var keys [][]byte
	for len(s.queue) > 0 && len(keys) < n && len(s.queue[0]) < kv.ScanPrefixLen {
		if s.r.contains(s.queue[0]) {
			keys = append(keys, s.queue[0])
		}
		s.queue = s.queue[1:]
	}
	return keys
}

// expandBatch reads the "z" sets of up to n 9-byte prefixes at the front
// of the queue in one round trip (a key kind whose keys are all 9 bytes,
// like the freed-slice queue, would otherwise cost a round trip per key)
// and returns their keys in order. It stops after about n keys; a set that
// may hold more than was read becomes s.inner, continued by later calls.
func (s *shortSource) expandBatch(n int) ([][]byte, error) {
	var heads [][]byte
	for len(heads) < min(n, len(s.queue)) && len(s.queue[len(heads)]) == kv.ScanPrefixLen {
		heads = append(heads, s.queue[len(heads)])
	}
	zkeys := make([]string, len(heads))
	cmds := make([]*redis.StringSliceCmd, len(heads))
	err := s.t.watchChecks(func(p redis.Pipeliner) {
		for i, h := range heads {
			zkeys[i] = s.t.s.keys.zset(h)
		}
		s.t.watchIn(p, zkeys...)
		for i, h := range heads {
			cmds[i] = p.ZRangeByLex(s.t.ctx, zkeys[i], &redis.ZRangeBy{Min: s.minFor(h), Max: "+", Count: int64(n)})
		}
	})
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	used := 0
	for i, h := range heads {
		members, err := cmds[i].Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		used++
		for _, m := range members {
			keys = append(keys, append(append(make([]byte, 0, len(h)+len(m)), h...), m...))
		}
		if len(members) == n { // maybe more: continue this set alone
			s.inner = &zsetSource{t: s.t, prefix9: h, min: "(" + members[n-1], max: "+"}
			break
		}
		if len(keys) >= n {
			break
		}
	}
	s.queue = s.queue[used:]
	return s.filter(keys), nil
}

// minFor is the ZRANGEBYLEX lower bound within the "z" set of head: from
// the range's start if it lies in that set, else from the first member.
func (s *shortSource) minFor(head []byte) string {
	if len(s.r.lo) >= kv.ScanPrefixLen && bytes.Equal(head, s.r.lo[:kv.ScanPrefixLen]) {
		return lexFrom(s.r.lo[kv.ScanPrefixLen:], s.r.loIncl)
	}
	return "-"
}

// readDir reads the next members of the current "d" set into the queue,
// moving on to the next first byte when it is exhausted. done: no first
// byte is left.
func (s *shortSource) readDir(n int) (bool, error) {
	if s.dDone {
		if s.first >= s.last {
			return true, nil
		}
		s.first++
		s.dMin, s.dDone = "-", false
	}
	first := byte(s.first)
	members, err := s.t.zrange(s.t.s.keys.dir(first), s.dMin, s.dMax, n)
	if err != nil {
		return false, err
	}
	for _, m := range members {
		s.queue = append(s.queue, append([]byte{first}, m...))
	}
	if len(members) > 0 {
		s.dMin = "(" + members[len(members)-1]
	}
	s.dDone = len(members) < n
	return false, nil
}

// filter drops keys outside the range (a safety net: the bounds used
// already exclude them).
func (s *shortSource) filter(keys [][]byte) [][]byte {
	out := keys[:0]
	for _, k := range keys {
		if s.r.contains(k) {
			out = append(out, k)
		}
	}
	return out
}
