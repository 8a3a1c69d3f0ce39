package rediskv

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"shoal/internal/meta/kv"
)

// maxAheadPage bounds the keys one PrefetchScan reads: a Scan asking for
// more (or for all) continues past the page with WATCHed rounds.
const maxAheadPage = 8192

// aheadChunk is how many keys one MGET of aheadScript reads (Lua's unpack
// has a bound of a few thousand).
const aheadChunk = 1000

// luaMget is the scripts' mget(keys): MGET in parts of 1,000 keys, so
// that unpack stays within Lua's stack limit.
const luaMget = `local function mget(keys)
  local out = {}
  for s = 1, #keys, 1000 do
    local part = redis.call('MGET', unpack(keys, s, math.min(s + 999, #keys)))
    for _, v in ipairs(part) do out[#out + 1] = v end
  end
  return out
end
`

// aheadScript reads, at one instant (a script runs alone), the point keys,
// up to count members of a "z" set in [min, max], the values of those
// members' keys and, if flen > 0, the key each value names: fprefix .. the
// value's bytes (off, off+flen]. ARGV: base, n, n point keys, zkey, min,
// max, count, vprefix (the value key of a member is vprefix .. member),
// fprefix, off, flen. It returns {point values, members, values, named
// values}, false where absent (and where a value names nothing).
const aheadScript = `
local n = tonumber(ARGV[2])
local i = 3 + n
local zkey, mn, mx, cnt = ARGV[i], ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3])
local vprefix, fprefix, off, flen = ARGV[i + 4], ARGV[i + 5], tonumber(ARGV[i + 6]), tonumber(ARGV[i + 7])
` + luaMget + `local pts = {}
for j = 1, n do pts[j] = ARGV[2 + j] end
local pv = mget(pts)
local members = redis.call('ZRANGEBYLEX', zkey, mn, mx, 'LIMIT', 0, cnt)
local vk = {}
for j, m in ipairs(members) do vk[j] = vprefix .. m end
local vals = mget(vk)
local fvals = {}
if flen > 0 then
  local fk, at = {}, {}
  for j, v in ipairs(vals) do
    fvals[j] = false
    if v and #v >= off + flen then
      fk[#fk + 1] = fprefix .. string.sub(v, off + 1, off + flen)
      at[#fk] = j
    end
  end
  local got = mget(fk)
  for j, v in ipairs(got) do fvals[at[j]] = v end
end
return {pv, members, vals, fvals}
`

var aheadScriptSHA = redis.NewScript(aheadScript)

// aheadPage is the page a PrefetchScan read by aheadScript: one instant,
// nothing WATCHed. Until rewatched, every later read round first WATCHes
// and re-reads what it read (rewatchAhead), so that all fn is given stays
// one state.
type aheadPage struct {
	prefix, after []byte
	pairs         []pair // the page, in key order
	last          []byte // the key of the last member read
	done          bool   // the range holds nothing past the page
	zkey          string // the ZRANGEBYLEX that read the page
	min, max      string
	count         int
	members       []string
	rkeys         []string // point and named keys read (values in read1)
	rewatched     bool     // WATCHed and found unchanged: EXEC checks it
}

var _ kv.ScanPrefetcher = (*tx)(nil)

// PrefetchScan implements kv.ScanPrefetcher. In a View that has WATCHed
// nothing and read no page ahead yet, it is one round trip: aheadScript
// re-reads the checks and reads keys, the page and the keys its values
// name, all at one instant (three for a page of more than aheadProbe
// members that names no keys: bigAhead). Its reads are not made checks: any later read
// round WATCHes and re-reads them first. Elsewhere it is Prefetch of keys.
func (t *tx) PrefetchScan(s kv.ScanAhead, keys ...[]byte) error {
	if t.err != nil {
		return t.err
	}
	if !t.readOnly || t.watching || t.token != "" || t.ahead != nil || len(s.Prefix) < kv.ScanPrefixLen {
		return t.Prefetch(keys...)
	}
	if err := t.afterSnap(); err != nil {
		return err
	}
	if err := t.scanAhead(s, keys); err != nil {
		return t.fail(err)
	}
	return nil
}

// aheadProbe is how many members of a page without named keys the script
// reads with their values. A page that may hold more is read without
// per-key Lua (bigAhead): in Redis, a script's work per key (its strings,
// tables and the conversions between Lua and replies) costs about as
// much as the reads themselves, and a listing of a big directory is
// mostly that.
const aheadProbe = 256

// aheadReply is what a page read found, all at one instant: the values
// of the checks and point keys (pv), the members of the page, their
// values and the values the values name (fvals, with FollowLen > 0),
// each value a string where present; vkeys are the members' value keys
// where the read built them (bigAhead), so that they are built once.
type aheadReply struct {
	pv, vals, fvals []any
	members         []string
	vkeys           []string
}

// scanAhead reads the page and keeps what it read: by aheadScript alone,
// or, for a page without named keys that may hold more than aheadProbe
// members, by bigAhead: after the script's probe of the first aheadProbe
// members at the start of the range, and at once for a page that goes on
// after a key (the next page of a big listing).
func (t *tx) scanAhead(s kv.ScanAhead, keys [][]byte) error {
	rkeys := t.unread(keys)
	r := newScanRange(s.Prefix, s.After)
	p9 := s.Prefix[:kv.ScanPrefixLen]
	count := s.Limit
	if count <= 0 || count > maxAheadPage {
		count = maxAheadPage
	}
	a := &aheadPage{
		prefix: append([]byte{}, s.Prefix...), after: append([]byte{}, s.After...),
		zkey: t.s.keys.zset(p9), min: lexFrom(r.lo[kv.ScanPrefixLen:], r.loIncl), max: lexBelow(r.prefix[kv.ScanPrefixLen:]),
		count: count,
	}
	big := s.FollowLen <= 0 && count > aheadProbe
	var rep *aheadReply
	var err error
	if big && len(s.After) == 0 {
		// The start of the range: the script probes it, so that a small
		// one (most directories) is one round trip.
		if rep, err = t.runAhead(a, s, rkeys, aheadProbe); err != nil {
			return err
		}
		if big = len(rep.members) == aheadProbe; big {
			rep = nil
		}
	}
	if big {
		if rep, err = t.bigAhead(a, rkeys); err != nil {
			return err
		}
	}
	if rep == nil { // not big, or the range changed during bigAhead
		if rep, err = t.runAhead(a, s, rkeys, count); err != nil {
			return err
		}
	}
	return t.keepAhead(a, s, rkeys, rep)
}

// runAhead runs aheadScript for up to count members of a's range and
// compares the checks' values.
func (t *tx) runAhead(a *aheadPage, s kv.ScanAhead, rkeys []string, count int) (*aheadReply, error) {
	args := make([]any, 0, 3+len(t.checks)+len(rkeys)+8)
	args = append(args, t.s.keys.base, len(t.checks)+len(rkeys))
	for _, c := range t.checks {
		args = append(args, c.rkey)
	}
	for _, rk := range rkeys {
		args = append(args, rk)
	}
	args = append(args, a.zkey, a.min, a.max, count, t.s.keys.value(a.prefix[:kv.ScanPrefixLen]), t.s.keys.value(s.FollowPrefix), s.FollowOff, s.FollowLen)
	route := []string{t.s.keys.route()}
	res, err := aheadScriptSHA.Run(t.ctx, t.rtx, route, args...).Slice()
	if err != nil {
		return nil, err
	}
	if len(res) != 4 {
		return nil, errScriptReply
	}
	rep := &aheadReply{}
	var members []any
	rep.pv, _ = res[0].([]any)
	members, _ = res[1].([]any)
	rep.vals, _ = res[2].([]any)
	rep.fvals, _ = res[3].([]any)
	if len(rep.pv) != len(t.checks)+len(rkeys) || len(rep.vals) != len(members) || (s.FollowLen > 0 && len(rep.fvals) != len(members)) {
		return nil, errScriptReply
	}
	rep.members = make([]string, len(members))
	for i, m := range members {
		ms, ok := m.(string)
		if !ok {
			return nil, errScriptReply
		}
		rep.members[i] = ms
	}
	if err := t.compareChecks(rep.pv); err != nil {
		return nil, err
	}
	return rep, nil
}

// compareChecks reports a conflict if a check's value (vals, in the order
// of t.checks) is not the one fn was given.
func (t *tx) compareChecks(vals []any) error {
	for i, c := range t.checks {
		if fingerprint(replyValue(vals[i])) != c.fp {
			return kv.ErrConflict
		}
	}
	return nil
}

// bigAhead reads a page without named keys without per-key Lua, at one
// instant, in two round trips: a WATCH of the range's sorted set and the
// page's members, then MULTI, an MGET of the checks, the point keys and
// the members' values, EXEC. EXEC runs only if the set is unchanged since
// the members were read, so they are the page's members at the instant it
// runs too, and everything returned is that instant's state. It returns
// nil if EXEC refused (the set changed: any create or delete in the
// range's 9-byte prefix); a check that changed is a conflict. EXEC ends
// the WATCH, so the transaction still WATCHes nothing afterwards.
func (t *tx) bigAhead(a *aheadPage, rkeys []string) (*aheadReply, error) {
	var zr *redis.StringSliceCmd
	// WATCHing until EXEC: should an error come first, the connection is
	// UNWATCHed before it goes back to the pool (attempt).
	t.watching = true
	if err := t.pipe(func(p redis.Pipeliner) {
		p.Do(t.ctx, "WATCH", a.zkey)
		zr = p.ZRangeByLex(t.ctx, a.zkey, &redis.ZRangeBy{Min: a.min, Max: a.max, Count: int64(a.count)})
	}); err != nil {
		return nil, err
	}
	members, err := zr.Result()
	if err != nil && err != redis.Nil {
		return nil, err
	}
	np := len(t.checks) + len(rkeys)
	all := make([]string, 0, np+len(members))
	for _, c := range t.checks {
		all = append(all, c.rkey)
	}
	all = append(all, rkeys...)
	all = append(all, joinedKeys(t.s.keys.value(a.prefix[:kv.ScanPrefixLen]), members)...)
	var mget *redis.SliceCmd
	_, err = t.rtx.TxPipelined(t.ctx, func(p redis.Pipeliner) error {
		if len(all) > 0 {
			mget = p.MGet(t.ctx, all...)
		} else {
			p.Ping(t.ctx)
		}
		return nil
	})
	if errors.Is(err, redis.TxFailedErr) {
		t.watching = false
		return nil, nil
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	t.watching = false
	var vals []any
	if mget != nil {
		if vals, err = mget.Result(); err != nil {
			return nil, err
		}
	}
	if len(vals) != len(all) {
		return nil, fmt.Errorf("MGET of %d keys answered %d values", len(all), len(vals))
	}
	if err := t.compareChecks(vals); err != nil {
		return nil, err
	}
	return &aheadReply{pv: vals[:np], members: members, vals: vals[np:], vkeys: all[np:]}, nil
}

// joinedKeys returns prefix+m for each member m, all slices of one string
// (one allocation for a page, not one a key).
func joinedKeys(prefix string, members []string) []string {
	size := 0
	for _, m := range members {
		size += len(prefix) + len(m)
	}
	var b strings.Builder
	b.Grow(size)
	for _, m := range members {
		b.WriteString(prefix)
		b.WriteString(m)
	}
	joined := b.String()
	out := make([]string, len(members))
	at := 0
	for i, m := range members {
		n := len(prefix) + len(m)
		out[i] = joined[at : at+n]
		at += n
	}
	return out
}

// keepAhead keeps the page read (rep) as t.ahead and the point keys' and
// named keys' values in read1.
func (t *tx) keepAhead(a *aheadPage, s kv.ScanAhead, rkeys []string, rep *aheadReply) error {
	if t.read1 == nil {
		t.read1 = map[string][]byte{}
	}
	for i, rk := range rkeys {
		v, _ := replyValue(rep.pv[len(t.checks)+i])
		t.read1[rk] = v
	}
	p9 := a.prefix[:kv.ScanPrefixLen]
	fprefix := t.s.keys.value(s.FollowPrefix)
	a.rkeys = rkeys
	a.members = rep.members
	a.pairs = make([]pair, 0, len(rep.members))
	// The page's keys and values share one allocation; each slice is
	// capped at its end, so that an append to one cannot reach the next.
	size := 0
	for i, ms := range rep.members {
		size += len(p9) + len(ms)
		if v, ok := rep.vals[i].(string); ok {
			size += len(v)
		}
	}
	buf := make([]byte, 0, size)
	for i, ms := range rep.members {
		start := len(buf)
		buf = append(append(buf, p9...), ms...)
		key := buf[start:len(buf):len(buf)]
		a.last = key
		vs, present := rep.vals[i].(string)
		if !present {
			continue // gone meanwhile: impossible at one instant
		}
		start = len(buf)
		buf = append(buf, vs...)
		v := buf[start:len(buf):len(buf)]
		a.pairs = append(a.pairs, pair{key, v})
		if s.FollowLen <= 0 || len(v) < s.FollowOff+s.FollowLen {
			continue
		}
		named := fprefix + string(v[s.FollowOff:s.FollowOff+s.FollowLen])
		got, gotPresent := replyValue(rep.fvals[i])
		if old, ok := t.read1[named]; ok {
			// Read before (a check, or a point key above): the same instant
			// or one the checks tie to it; the value must agree.
			if !bytes.Equal(old, got) || (old != nil) != gotPresent {
				return kv.ErrConflict
			}
			continue
		}
		t.read1[named] = got
		a.rkeys = append(a.rkeys, named)
	}
	a.done = len(rep.members) < a.count
	t.ahead = a
	t.dropCached(a.pairs, rep.vkeys, a.rkeys)
	return nil
}

// dropCached drops what a page read afresh from the client-side cache
// (track.go): the kernel may be told these values, and the cache must
// not go back to older ones. vkeys, if not nil, are the value keys of a
// superset of pairs (built by the read already).
func (t *tx) dropCached(pairs []pair, vkeys, rkeys []string) {
	if !t.s.track.running.Load() {
		return
	}
	if vkeys == nil {
		vkeys = make([]string, 0, len(pairs))
		for _, p := range pairs {
			vkeys = append(vkeys, t.s.keys.value(p.k))
		}
	}
	t.s.track.drop(vkeys)
	t.s.track.drop(rkeys)
}

// replyValue reads one value of a script's reply: nil and false where
// absent, a non-nil slice where present.
func replyValue(r any) ([]byte, bool) {
	if s, ok := r.(string); ok {
		return append(make([]byte, 0, len(s)), s...), true
	}
	return nil, false
}

// pendingAhead reports whether a page read ahead still needs rewatching
// before another read round.
func (t *tx) pendingAhead() bool { return t.ahead != nil && !t.ahead.rewatched }

// rewatchAhead queues, if the page read ahead is not WATCHed yet, a WATCH
// of everything aheadScript read and a re-read of it; the returned func
// (nil if nothing was queued) reports a conflict if any of it changed
// since. Unchanged, all of it is as of the instant the WATCHes began, and
// EXEC fails if it changes later.
func (t *tx) rewatchAhead(p redis.Pipeliner) func() error {
	a := t.ahead
	if a == nil || a.rewatched {
		return nil
	}
	all := make([]string, 0, len(a.pairs)+len(a.rkeys))
	for _, pr := range a.pairs {
		all = append(all, t.s.keys.value(pr.k))
	}
	all = append(all, a.rkeys...)
	t.watchIn(p, append([]string{a.zkey}, all...)...)
	zr := p.ZRangeByLex(t.ctx, a.zkey, &redis.ZRangeBy{Min: a.min, Max: a.max, Count: int64(a.count)})
	var mget *redis.SliceCmd
	if len(all) > 0 {
		mget = p.MGet(t.ctx, all...)
	}
	return func() error {
		members, err := zr.Result()
		if err != nil && err != redis.Nil {
			return err
		}
		if len(members) != len(a.members) {
			return kv.ErrConflict
		}
		for i, m := range members {
			if m != a.members[i] {
				return kv.ErrConflict
			}
		}
		if mget != nil {
			vals, present, err := mgetValues(mget, len(all))
			if err != nil {
				return err
			}
			for i := range all {
				var old []byte
				if i < len(a.pairs) {
					old = a.pairs[i].v
				} else {
					old = t.read1[all[i]]
				}
				if (old != nil) != present[i] || !bytes.Equal(old, vals[i]) {
					return kv.ErrConflict
				}
			}
		}
		a.rewatched = true
		return nil
	}
}

// fromAhead returns the page read ahead for a Scan of prefix after after,
// if there is one: its pairs, and the range left past it (nil if none).
func (t *tx) fromAhead(prefix, after []byte) ([]pair, *scanRange, bool) {
	a := t.ahead
	if a == nil || !bytes.Equal(a.prefix, prefix) || !bytes.Equal(a.after, after) {
		return nil, nil, false
	}
	if a.done || a.last == nil {
		return a.pairs, nil, true
	}
	rest := newScanRange(prefix, a.last[len(prefix):])
	return a.pairs, &rest, true
}
