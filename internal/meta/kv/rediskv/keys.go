package rediskv

import "shoal/internal/meta/kv"

// layout names the Redis keys of one namespace. With base = "{ns}:":
//
//	base + "k" + key          string: the value of key
//	base + "z" + key[:9]      sorted set, all scores 0: members key[9:] of
//	                          every key of at least kv.ScanPrefixLen bytes
//	base + "d" + key[:1]      sorted set, all scores 0: members key[1:9] of
//	                          every key's 9-byte prefix in use, and key[1:]
//	                          of every key shorter than 9 bytes
//
// An ordered Scan of a 9-byte-or-longer prefix reads one "z" set with
// ZRANGEBYLEX. A shorter prefix walks the "d" set of its first byte (all
// 256 of them for an empty prefix) and expands each 8-byte member into
// its "z" set; members shorter than 8 bytes are whole short keys. Both
// orders equal the key order, so every Scan is ordered and paged.
//
// The braces are a Redis Cluster hash tag: every key of a namespace maps
// to one slot, so WATCH/MULTI/EXEC and the commit script work in Cluster
// mode too. The same layout is used in every mode.
//
// base + "f" is the freeze key: while it exists, holding the random token
// of a running Exclusive (exclusive.go), the commit script refuses every
// other transaction's writes.
//
// base + "v" holds the layout version. A binary refuses a namespace with a
// higher version than layoutVersion (meta.ErrNewerFormat); a future one
// finding a lower version upgrades the namespace before use.
type layout struct{ base string }

// layoutVersion is the version of the layout above.
const layoutVersion = 1

func newLayout(ns string) layout { return layout{base: "{" + ns + "}:"} }

func (l layout) value(key []byte) string    { return l.base + "k" + string(key) }
func (l layout) zset(prefix9 []byte) string { return l.base + "z" + string(prefix9) }
func (l layout) dir(first byte) string      { return l.base + "d" + string([]byte{first}) }

// freeze holds the token of the Exclusive running on the namespace.
func (l layout) freeze() string { return l.base + "f" }

// version holds the layout version of the namespace (layoutVersion).
func (l layout) version() string { return l.base + "v" }

// route is a key that is never written: it only names the namespace's
// slot when a Cluster client must pick a node before any key is read.
func (l layout) route() string { return l.base + "r" }

// pattern matches every key of the namespace (for test clean-up).
func (l layout) pattern() string { return l.base + "*" }

// dirMember is key's member in its "d" set.
func dirMember(key []byte) string {
	if len(key) >= kv.ScanPrefixLen {
		return string(key[1:kv.ScanPrefixLen])
	}
	return string(key[1:])
}

// commitScript applies a transaction's writes and keeps the index sets in
// step, atomically (it runs inside MULTI/EXEC after the WATCHed reads).
// ARGV[1] is the base; ARGV[2] the committing Exclusive's freeze token, or
// "" for any other transaction; ARGV[3] the number of checks, each a Redis
// key and the fingerprint its value must still have; then "s", key, value
// or "d", key per write. It writes nothing and returns -1 if the namespace
// is frozen and the token is "", -2 if the freeze key does not hold the
// token given, 0 if a check fails; else it writes and returns 1.
//
// A "d" set holds a prefix member exactly while the prefix's "z" set is
// not empty: it loses it only once the "z" set is empty, and a write
// adds it only if the "z" set gained a member (one that did not is not
// empty, so the member is there: an overwrite, most writes, skips a
// ZADD). A key a check just found present has its members already (the
// sets hold a member for every key, and nothing ran in between): its
// write touches no set (the directory's attributes a create, unlink or
// rename rewrites, the file's a write's commit rewrites). This script is
// the only writer of the sets. KEYS[1] is the namespace's route key,
// naming the slot in Cluster mode.
const commitScript = `
local base = ARGV[1]
local frozen = redis.call('GET', base .. 'f')
if ARGV[2] == '' then
  if frozen then return -1 end
elseif frozen ~= ARGV[2] then
  return -2
end
local i = 4
local present = {}
for c = 1, tonumber(ARGV[3]) do
  local cur = redis.call('GET', ARGV[i])
  local fp = '-'
  if cur then
    fp = redis.sha1hex(cur)
    present[ARGV[i]] = true
  end
  if fp ~= ARGV[i + 1] then return 0 end
  i = i + 2
end
while i <= #ARGV do
  local op, k = ARGV[i], ARGV[i + 1]
  local vkey = base .. 'k' .. k
  local long = #k >= 9
  if op == 's' then
    redis.call('SET', vkey, ARGV[i + 2])
    if present[vkey] then
      -- a check just found the key: its members are there
    elseif not long then
      redis.call('ZADD', base .. 'd' .. string.sub(k, 1, 1), 0, string.sub(k, 2))
    elseif redis.call('ZADD', base .. 'z' .. string.sub(k, 1, 9), 0, string.sub(k, 10)) == 1 then
      redis.call('ZADD', base .. 'd' .. string.sub(k, 1, 1), 0, string.sub(k, 2, 9))
    end
    i = i + 3
  else
    if redis.call('DEL', vkey) == 1 then
      local dkey = base .. 'd' .. string.sub(k, 1, 1)
      if long then
        local zkey = base .. 'z' .. string.sub(k, 1, 9)
        redis.call('ZREM', zkey, string.sub(k, 10))
        if redis.call('EXISTS', zkey) == 0 then redis.call('ZREM', dkey, string.sub(k, 2, 9)) end
      else
        redis.call('ZREM', dkey, string.sub(k, 2))
      end
    end
    i = i + 2
  end
end
return 1
`
