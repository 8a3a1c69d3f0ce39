package rediskv

import (
	"errors"

	"github.com/redis/go-redis/v9"

	"shoal/internal/meta/kv"
)

// Whole short Scans in one script.
//
// A Scan of a prefix shorter than kv.ScanPrefixLen (shortSource) WATCHes
// the "d" set it walks, the "z" set of every 9-byte prefix it expands and
// every value key it returns. A kind whose keys are all 9 bytes (the
// freed-slice list, 'L' id) has one "z" set per key, so a listing of n
// keys WATCHes 2n keys; and Redis checks each new WATCH against every key
// the connection already WATCHes, one by one: the listing costs Redis
// O(n²). A mount's cleaner lists the freed slices (in pages of 64, up to
// 32 pages every two seconds; it once read up to 100,000 in one Scan);
// during PostMark (thousands freed a minute, kept DeleteDelay) those
// WATCHes took most of Redis's time.
//
// So a View's first attempt reads such a Scan whole, when it has a limit
// of at most snapMax keys, with snapScript: one script, which re-reads the
// checks and walks the sets and reads the values as shortSource would,
// all at one instant, and WATCHes nothing. Everything the View was given
// is then that instant's state. If fn reads anything more from Redis
// afterwards (another read round, Scan or prefetch), the attempt ends as a
// conflict and the next one takes the WATCHed path, which keeps later
// rounds at one state with the earlier ones: simpler than re-validating
// the sets read, and Views that scan a short prefix and read on are rare
// (admin commands). Values read are dropped from the client-side cache,
// as a Scan's are (values).
//
// Redis serves no one else while a script runs: snapMax bounds its work
// (a limit-0 Scan, which may read a whole volume, keeps the paged,
// WATCHed path), but the caller should keep its limit small: measured,
// 6-15 µs of Redis per key of the freed list (1.5 s for 100,000, on a
// loaded machine). The script reads no more "d" members a round than it
// still needs keys (a page of 64 keys read 1024 members before).
const snapMax = 100000

// snapScript reads, at one instant, the checks' values and up to limit
// keys of a short range with their values. ARGV: base, nchecks, the
// checks' Redis keys, first, last (first bytes to walk, as numbers),
// dmin, dmax (ZRANGEBYLEX bounds in the first byte's "d" set), lo9,
// zmin (the bound in the "z" set of the 9-byte prefix lo9, the range's
// start; "" if none), limit. It returns {check values, keys, values,
// done}: done is 1 if the range holds nothing more.
const snapScript = `
local base = ARGV[1]
local nc = tonumber(ARGV[2])
local i = 3 + nc
local first, last = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
local dmin, dmax, lo9, zmin = ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
local limit = tonumber(ARGV[i + 6])
` + luaMget + `local ck = {}
for j = 1, nc do ck[j] = ARGV[2 + j] end
local cv = mget(ck)
local keys = {}
local done = 1
for b = first, last do
  local fb = string.char(b)
  local dkey = base .. 'd' .. fb
  local mn, mx = '-', '+'
  if b == first then mn = dmin end
  if b == first and b == last then mx = dmax end
  while true do
    if #keys >= limit then done = 0 break end
    local want = math.min(1024, limit - #keys)
    local ms = redis.call('ZRANGEBYLEX', dkey, mn, mx, 'LIMIT', 0, want)
    for _, m in ipairs(ms) do
      if #keys >= limit then done = 0 break end
      if #m < 8 then
        keys[#keys + 1] = fb .. m
      else
        local head = fb .. m
        local zm = '-'
        if head == lo9 then zm = zmin end
        local zs = redis.call('ZRANGEBYLEX', base .. 'z' .. head, zm, '+', 'LIMIT', 0, limit - #keys)
        for _, z in ipairs(zs) do keys[#keys + 1] = head .. z end
      end
    end
    if done == 0 or #ms < want then break end
    mn = '(' .. ms[#ms]
  end
  if done == 0 then break end
end
local vk = {}
for j, k in ipairs(keys) do vk[j] = base .. 'k' .. k end
return {cv, keys, mget(vk), done}
`

var snapScriptSHA = redis.NewScript(snapScript)

var errSnapReply = errors.New("rediskv: unexpected reply of the short-scan script")

// snapScan reads the whole of a Scan of r (a prefix shorter than
// kv.ScanPrefixLen) with at most limit keys by snapScript, if this
// attempt may: the first of a View, nothing WATCHed, no page read ahead,
// and no earlier round read at one instant unchecked (snapped: a script
// Scan or a plain MGET, tx.read; the script compares only the checks).
// ok false: it did not (and changed nothing); the Scan takes the WATCHed
// path, whose first round ends a snapped attempt as a conflict.
func (t *tx) snapScan(r scanRange, limit int) (pairs []pair, ok bool, err error) {
	if !t.snapOK || t.snapped || !t.readOnly || t.watching || t.token != "" || t.ahead != nil ||
		len(r.prefix) >= kv.ScanPrefixLen || limit <= 0 || limit > snapMax {
		return nil, false, nil
	}
	s := newShortSource(t, r)
	lo9, zmin := "", ""
	if len(r.lo) >= kv.ScanPrefixLen {
		lo9, zmin = string(r.lo[:kv.ScanPrefixLen]), s.minFor(r.lo[:kv.ScanPrefixLen])
	}
	args := make([]any, 0, 9+len(t.checks))
	args = append(args, t.s.keys.base, len(t.checks))
	for _, c := range t.checks {
		args = append(args, c.rkey)
	}
	args = append(args, s.first, s.last, s.dMin, s.dMax, lo9, zmin, limit)
	res, err := snapScriptSHA.Run(t.ctx, t.rtx, []string{t.s.keys.route()}, args...).Slice()
	if err != nil {
		return nil, false, err
	}
	if len(res) != 4 {
		return nil, false, errSnapReply
	}
	cv, _ := res[0].([]any)
	keys, _ := res[1].([]any)
	vals, _ := res[2].([]any)
	done, _ := res[3].(int64)
	if len(cv) != len(t.checks) || len(vals) != len(keys) {
		return nil, false, errSnapReply
	}
	if err := t.compareChecks(cv); err != nil {
		return nil, false, err
	}
	pairs = make([]pair, 0, len(keys))
	rkeys := make([]string, 0, len(keys))
	for i, k := range keys {
		ks, isStr := k.(string)
		if !isStr {
			return nil, false, errSnapReply
		}
		key := []byte(ks)
		if !r.contains(key) {
			if done == 0 {
				// The script counted a key outside the range toward the
				// limit: what it read may not reach the limit. Not
				// expected (its bounds are shortSource's); take the
				// WATCHed path.
				return nil, false, nil
			}
			continue
		}
		v, present := replyValue(vals[i])
		if !present {
			continue // impossible at one instant: indexed means stored
		}
		pairs = append(pairs, pair{key, v})
		rkeys = append(rkeys, t.s.keys.value(key))
	}
	t.snapped = true
	t.s.track.drop(rkeys)
	return pairs, true, nil
}

// afterSnap is called before every read round that goes to Redis: after
// a snapScan, it ends the attempt as a conflict (see above).
func (t *tx) afterSnap() error {
	if t.snapped {
		return t.fail(kv.ErrConflict)
	}
	return nil
}
