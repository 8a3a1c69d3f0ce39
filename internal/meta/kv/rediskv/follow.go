package rediskv

import (
	"errors"

	"github.com/redis/go-redis/v9"

	"shoal/internal/meta/kv"
)

// followScript reads, at one instant (a script runs alone), the keys
// ARGV[5..] and then the key the value of the last of them names: base ..
// "k" .. prefix .. the value's bytes (off, off+len]. ARGV[1..4] are base,
// prefix, off and len. It returns the values in order (false where
// absent), then, if the last value names a key, that key's value and its
// Redis name.
const followScript = `
local base, prefix, off, n = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local keys = {}
for i = 5, #ARGV do keys[#keys + 1] = ARGV[i] end
local vals = redis.call('MGET', unpack(keys))
local from = vals[#keys]
if from and #from >= off + n then
  local k = base .. 'k' .. prefix .. string.sub(from, off + 1, off + n)
  vals[#keys + 1] = redis.call('GET', k)
  vals[#keys + 2] = k
end
return vals
`

var followScriptSHA = redis.NewScript(followScript)

var errScriptReply = errors.New("rediskv: unexpected reply of the follow script")

var _ kv.FollowPrefetcher = (*tx)(nil)

// PrefetchFollow implements kv.FollowPrefetcher. Without WATCHes it is
// one round trip: followScript re-reads the checks, reads keys and f.From,
// and the key f.From names, all at one instant, which then become checks
// like any read round's (tx.read). Otherwise, or if f.From's value is
// already known here, it is Prefetch (with the named key, if known).
func (t *tx) PrefetchFollow(f kv.Follow, keys ...[]byte) error {
	if t.err != nil {
		return t.err
	}
	all := append(keys[:len(keys):len(keys)], f.From)
	from, known := t.known(f.From)
	if known {
		if from != nil && len(from) >= f.Off+f.Len {
			all = append(all, append(append([]byte{}, f.Prefix...), from[f.Off:f.Off+f.Len]...))
		}
		return t.Prefetch(all...)
	}
	if t.watching || t.token != "" || t.pendingAhead() || len(t.checks)+len(all)+1 > maxChecks {
		return t.Prefetch(all...)
	}
	if err := t.afterSnap(); err != nil {
		return err
	}
	rkeys := t.unread(keys)
	rkeys = append(rkeys, t.s.keys.value(f.From)) // last: the one followed
	if t.cachedFollow(f, rkeys) || t.seedFollow(f, rkeys) {
		return nil
	}
	if err := t.follow(f, rkeys); err != nil {
		return t.fail(err)
	}
	return nil
}

// known returns key's value if this transaction knows it without a read:
// written, or read before.
func (t *tx) known(key []byte) ([]byte, bool) {
	if w, ok := t.writes[string(key)]; ok {
		if w.deleted {
			return nil, true
		}
		return w.value, true
	}
	v, ok := t.read1[t.s.keys.value(key)]
	return v, ok
}

// follow runs followScript over the checks and rkeys and records what it
// read as checks.
func (t *tx) follow(f kv.Follow, rkeys []string) error {
	args := []any{t.s.keys.base, f.Prefix, f.Off, f.Len}
	for _, c := range t.checks {
		args = append(args, c.rkey)
	}
	for _, rk := range rkeys {
		args = append(args, rk)
	}
	g := t.s.track.guard(rkeys)
	res, err := followScriptSHA.Run(t.ctx, t.rtx, []string{t.s.keys.route()}, args...).Slice()
	if err != nil {
		return err
	}
	n := len(t.checks) + len(rkeys)
	if len(res) != n && len(res) != n+2 {
		return errScriptReply
	}
	value := func(r any) ([]byte, bool) {
		if s, ok := r.(string); ok {
			return append([]byte{}, s...), true
		}
		return nil, false
	}
	for i, c := range t.checks {
		if fingerprint(value(res[i])) != c.fp {
			return kv.ErrConflict
		}
	}
	got := map[string]any{}
	for i, rk := range rkeys {
		got[rk] = res[len(t.checks)+i]
	}
	if len(res) == n+2 {
		named, _ := res[n+1].(string)
		if _, ok := t.read1[named]; ok {
			// Read before: its check stands; the value must agree.
			if v, present := value(res[n]); fingerprint(t.read1[named], t.read1[named] != nil) != fingerprint(v, present) {
				return kv.ErrConflict
			}
		} else if _, dup := got[named]; !dup {
			rkeys = append(rkeys, named)
			got[named] = res[n]
		}
	}
	if t.read1 == nil {
		t.read1 = map[string][]byte{}
	}
	vals, presents := make([][]byte, len(rkeys)), make([]bool, len(rkeys))
	for i, rk := range rkeys {
		v, present := value(got[rk])
		t.checks = append(t.checks, check{rkey: rk, fp: fingerprint(v, present)})
		if present && v == nil {
			v = []byte{}
		}
		t.read1[rk] = v
		vals[i], presents[i] = v, present
	}
	t.s.seeds.put(rkeys, vals, presents)
	t.s.track.fill(rkeys, vals, presents, g) // a key named by the read: no slot guard
	return nil
}

// cachedFollow is PrefetchFollow's round from the client-side cache: a
// View's first, if every key, and the key f.From's value names, may be
// served (track.go). All of them were current at one instant, which the
// context's meta.Cached is told; they become checks like a read round's,
// so that a later round, if any, finds them still current or conflicts
// (and the retry reads from Redis). If the other keys may not be served
// but f.From and the key it names may (a lookup in a directory whose
// attributes this client keeps changing), those two are, and the others
// are left to be read if fn asks for them (a trusted lookup that finds
// its entry does not).
func (t *tx) cachedFollow(f kv.Follow, rkeys []string) bool {
	c := t.cached
	t.cached = nil // the first round only
	if c == nil || len(t.checks) > 0 {
		return false
	}
	named := func(vs []trackedValue) string {
		if from := vs[len(vs)-1]; from.present && len(from.value) >= f.Off+f.Len {
			return t.s.keys.value(append(append([]byte{}, f.Prefix...), from.value[f.Off:f.Off+f.Len]...))
		}
		return ""
	}
	all, vs, at, ok := t.s.track.get(rkeys, named)
	if !ok && len(rkeys) > 1 {
		all, vs, at, ok = t.s.track.get(rkeys[len(rkeys)-1:], named)
	}
	if !ok {
		return false
	}
	rkeys = all
	if t.read1 == nil {
		t.read1 = map[string][]byte{}
	}
	for i, v := range vs {
		val := v.value
		if v.present && val == nil {
			val = []byte{}
		}
		t.read1[rkeys[i]] = val
		t.checks = append(t.checks, check{rkey: rkeys[i], fp: fingerprint(v.value, v.present)})
	}
	t.s.track.served.Add(1)
	c.Served(at)
	return true
}

// unread returns the Redis keys of those of keys this transaction has not
// read yet, each once, in order.
func (t *tx) unread(keys [][]byte) []string {
	var rkeys []string
	seen := map[string]bool{}
	for _, k := range keys {
		rk := t.s.keys.value(k)
		if _, ok := t.known(k); ok || seen[rk] {
			continue
		}
		seen[rk] = true
		rkeys = append(rkeys, rk)
	}
	return rkeys
}
