// Package rediskv implements kv.Store over Redis (standalone, Sentinel or
// Cluster) with github.com/redis/go-redis/v9.
//
// # META-URLs
//
//	redis://[[USER]:PASSWORD@]HOST[:6379][/DB][?PARAMS]
//	rediss://...                                   the same over TLS
//	redis+sentinel://[[USER]:PASSWORD@]HOST[:26379],HOST2[:26379]/MASTER[/DB][?PARAMS]
//	redis+cluster://[[USER]:PASSWORD@]HOST:PORT,HOST2:PORT[?PARAMS]
//	redis://HOST:PORT,HOST2:PORT/?cluster=true     the same as redis+cluster://
//
// (rediss+sentinel:// and rediss+cluster:// add TLS.) PARAMS:
//
//	ns=NAME               key namespace, default "shoal": several volumes
//	                      can share one Redis database
//	retry_timeout=30s     retry bound of one transaction
//	cluster=true          Cluster mode for a redis:// URL
//	cache=off             no client-side cache (see Cache); default on
//	sentinel_password=P   password of the Sentinels (the one in the
//	                      URL's user part is the master's)
//	ca=FILE               rediss only: PEM CA certificate(s) the server's
//	                      certificate must chain to, instead of the
//	                      system roots
//	cert=FILE, key=FILE   rediss only: client certificate and key, for a
//	                      server that requires them (tls-auth-clients yes)
//
// Over TLS the server's certificate is always verified against the host
// of the (first) address; there is no option to skip that (see tlsconf).
//
// # Layout
//
// Each kv key is one Redis string; sorted sets index the keys for ordered
// Scans (keys.go has the details). All keys of a namespace share the hash
// tag "{NAME}", so in Cluster mode they live in one slot: a volume's
// metadata is then served by one master (Cluster buys failover, not
// sharding), which is what lets every transaction be one MULTI/EXEC.
//
// A Scan WATCHes the keys it reads (but for a page read ahead: see
// Transactions), and Redis keeps those WATCHes in memory until EXEC: read big ranges (a dump of a whole volume) in pages
// over several transactions, or in one Exclusive, which WATCHes nothing.
//
// # Transactions
//
// Redis has no snapshots, so transactions are optimistic, and a point
// read costs no round trip beyond its own:
//
//  1. Txn and View take a dedicated connection. Point reads (Get,
//     GetMany, Prefetch) go without a WATCH; each is kept as a check, its
//     Redis key and the SHA-1 of the value fn was given. Each read round
//     is one MGET of every check and the new keys: one command, so one
//     instant of the database. If every check still has its value, all
//     that fn was given so far is the state at that instant; if one
//     changed, the read is a conflict. A key read once is served from the
//     transaction afterwards (kv.Prefetcher: kvmeta fetches a directory's
//     attributes and an entry together). kv.FollowPrefetcher's round is a
//     script instead of the MGET (follow.go), which also reads the key
//     the entry's value names (the child's attributes): also one instant.
//  2. A Scan WATCHes what it depends on: the sorted set(s) it ranges over
//     and then the value keys it returns (a limited Scan reads up to 1024
//     keys a round, an unlimited one 256). Its first round also WATCHes
//     and re-reads the checks (a changed value is a conflict), and from
//     then on every point read is WATCHed too, before it is read; so are
//     the checks once there are more than maxChecks (32) of them.
//     Except in a View that WATCHes nothing yet: there kv.ScanPrefetcher's
//     round (ahead.go) is one script, which re-reads the checks and reads
//     the point keys, a page of the range (up to 8192 members of its
//     sorted set and their values) and the keys the values name, all at
//     one instant; a Scan of that range starts with the page, and Gets of
//     those keys are answered from it. A page that names no keys and
//     may hold more than 256 members (a plain listing of a big
//     directory) is read without per-key Lua, whose work in Redis costs
//     more than the reads: a WATCH of the sorted set and its members,
//     then MULTI, an MGET of the checks, the point keys and the members'
//     values, EXEC (at the start of a range the script reads the first
//     256 before, and that is all for a smaller one). EXEC runs only if
//     the set did not change since its members were read, so all of it
//     is EXEC's instant (if it changed, the script reads the whole page),
//     and EXEC ends the WATCH. Nothing of it is WATCHed or made a
//     check (a page is too many keys to re-read every round): the next
//     read round, if any, first WATCHes all of it and re-reads it, a
//     change being a conflict, and goes on WATCHing as above.
//     And in a View's first attempt that WATCHes nothing yet, a Scan of
//     a prefix shorter than 9 bytes with a limit of at most 100,000 keys
//     (the freed-slice listing) is one script (snap.go), which re-reads
//     the checks and reads the whole Scan at one instant, WATCHing
//     nothing: WATCHing it would cost Redis O(n²) (it compares each new
//     WATCH with every one the connection holds). If fn then reads more
//     from Redis, the attempt is a conflict and the next one WATCHes.
//     Likewise a View's first attempt whose first read round has more
//     than maxChecks keys reads them in one plain MGET, WATCHing
//     nothing (a mount's flush reads 1024 orphan marks at a time): one
//     command, one instant, and a later read round, a short Scan by
//     script included, ends the attempt as a conflict (tx.read).
//  3. Writes are buffered in the transaction (Get and Scan read them
//     back, merged in key order) and nothing reaches Redis before commit.
//  4. Commit: with nothing WATCHed, a transaction without writes (a View,
//     or a Txn that wrote nothing) is done: its reads were one state, as
//     of its last MGET. One with writes is one EVALSHA of the commit
//     script (the text is sent only if the server lacks it), which
//     compares every check's SHA-1 first and writes only if all hold,
//     atomically (Redis runs a script alone): the transaction is
//     equivalent to running alone at that instant, which is
//     serializability. Once WATCHing, commit is MULTI, the script (or a
//     PING without writes), EXEC: EXEC runs only if no WATCHed key changed
//     since it was read (and a check, re-read after its WATCH, was current
//     then), so every value the transaction read was still current at the
//     instant EXEC ran.
//  5. On a conflict (a check that failed, or EXEC refusing:
//     redis.TxFailedErr), fn runs again from scratch, with exponential
//     backoff and jitter. So does it after a connection error, until the
//     retry bound (30 s by default) is spent; then the error wraps
//     meta.ErrUnavailable. An error during the commit of a transaction
//     with writes has an unknown outcome and is returned at once as
//     meta.ErrUnavailable (running fn twice could apply it twice), unless
//     no connection could be made (the commit was never sent).
//  6. Seeds (seeds.go): the first attempt of a Txn may take its first
//     read round from the values this client read or wrote in the last
//     half second, when it has them all, instead of reading them: they
//     become checks like read values, so the commit script compares them,
//     and a seeded Txn that ends without writes still runs it, to
//     validate them before its outcome (an error such as EEXIST) is
//     believed. A stale seed is a conflict, and the retry reads. Keys
//     kvmeta names almost always absent (kv.AbsentGuesser: slices'
//     reference counts) are taken as absent the same way, in any read
//     round of the first attempt that holds only them.
//
// Round trips, then: a View of point reads costs one per read round and
// nothing to commit (kvmeta's Lookup: one, the directory's attributes,
// the entry and the child's attributes together, or none from the cache,
// which may serve the entry and the child without the directory's
// attributes, or know the name absent: see Cache and Fresh prefixes;
// kvmeta's Readdir: one, the directory's attributes, a page of entries and, for readdirplus,
// their attributes together; two or three for a page of more than 256
// names without attributes); a Txn of point reads
// one per read round plus one (kvmeta's create and unlink: two), less
// the first round when seeds cover it (a create or unlink after the
// kernel's lookup of the name, or a create in a fresh directory: one; also for a file with data, whose
// slices' reference counts are guessed absent: kv.AbsentGuesser). A read of one key outside a
// transaction (kv.PointReader: kvmeta's Getattr) is one GET on a pooled
// connection, or none from the cache.
//
// A consequence of optimism: an attempt that is later discarded may have
// shown fn a mix of states (a value read before another client's commit,
// the next one after it). fn must therefore have no effects besides tx,
// and an error fn returns is trusted only once its reads are known to be
// one state: at once without WATCHes (the last MGET showed it), else
// after an EXEC of a PING; if they were stale, fn runs again.
//
// # Cache
//
// The store keeps, on the client, the values of the keys kvmeta names
// (kv.Cacher: an inode's attributes and directory entries), and Redis
// invalidates them (track.go): one connection has CLIENT TRACKING on in
// broadcast mode for those prefixes, with invalidations sent to itself,
// and is subscribed to them, so Redis names to it every such key anyone
// modifies. Only a read whose context carries a meta.Cached (a mount's
// lookup or getattr, never under --strict, never an open, never inside a
// Txn) is answered from the cache: GetOne, and a View's first read round
// by PrefetchFollow (kvmeta's Lookup: none of its keys then costs a round
// trip). If the directory's attributes may not be served but the entry
// and the child's attributes may, those two are (follow.go), and the
// directory's attributes are read only if the lookup needs them (an
// untrusted caller, or a missing name). Its keys become checks as a read
// round's would.
//
// Fresh prefixes (fresh.go, kv.FreshPrefixer and kv.AbsentKnower): a
// transaction may name a prefix no key is under before it commits
// (kvmeta: the entries of a directory it creates). The tracker then
// records, from before the commit is sent, every key under the prefix
// that Redis's invalidations (which name every key changed under a
// tracked prefix, read or not) or this client's own writes change; any
// other key under it is absent, as of the same instant as a cached
// value (below). A mount's lookup of a name about to be created in a
// directory it made is so answered ENOENT without a round trip, and the
// create's first read round takes the entry as an absent seed: a create
// is one round trip, its commit. A reset forgets every record; a full
// table, those used least lately.
//
// Why an answer is current: the connection sends one PING at a time, each
// after the answer to the one before. Broadcast invalidations are queued
// at the end of an event-loop turn, so the answer to a PING may precede
// the invalidation of a change made in the same turn, but not that of a
// change made before the previous PING ran (which was in an earlier
// turn). So when PING k is answered, every value inserted before PING k-1
// was sent, and not invalidated since, was current when PING k-1 ran. The
// cache serves only such values, and only while that instant is less than
// staleMax (0.1 s) old, and reports the instant to the caller (meta.Cached)
// so that the kernel's timeouts are shortened by it. A value read is
// inserted only if no invalidation of its key arrived between sending the
// read and inserting it (otherwise the read may predate a change whose
// invalidation is spent). This client's commits drop the old values of
// what they wrote before they return; the values are read again, in a
// batch, once the commit returned and Redis's invalidation came back, so
// that a stat of what a mount just created is answered from the cache
// (read, not taken from the commit: Redis names a key once per event-loop
// turn, so the invalidation answering this commit's write may also stand
// for another client's later write in the same turn; track.go).
// A read that refreshes values without inserting them (a listing page)
// drops them, so that the cache never answers with a value older than
// one the kernel was told. Any doubt (a new connection, an unexpected
// message, a flushed database, a ping unanswered for a second) empties the
// cache. It holds at most 2^18 values, enough for the entries and
// attributes of a 100,000-entry directory (about 230 bytes of heap each,
// some 60 MiB at most); a full cache forgets an eighth of its values, at
// random: forgetting is always safe, a value forgotten is read again, and
// inserted only under the same rule as any read. Write transactions may
// take their first read round from cached values as from seeds
// (seeds.go): the commit compares them anyway.
//
// The cache needs Redis 6 or later and the right to run CLIENT TRACKING;
// without them the store logs one warning and reads everything from
// Redis. It is off in Cluster mode and with cache=off.
//
// # Exclusive
//
// Store.Exclusive (kv.Excluder, exclusive.go) freezes the namespace: SET
// base+"f" to a random token, NX, with a 15 s TTL that a goroutine renews
// every 5 s while fn runs. The commit script, the only path by which any
// transaction writes kv data, refuses to write while the freeze key exists
// (a Txn's script gets no token): the client takes that as a conflict and
// runs fn again after a backoff, so writers wait, within their retry bound,
// for the freeze to end. Redis runs commands one at a time: a commit whose
// EXEC ran before the SET is in the state fn reads, and none runs its
// script after the SET until the freeze ends, so fn sees one state that
// nothing changes. Its reads therefore need no WATCH (none is sent, so
// the read set may be hundreds of thousands of keys). Its commit is one
// MULTI/EXEC of the script in chunks of 4096 writes, each passing the
// token, and a DEL of the freeze if it still holds the token, sent on a
// second client whose timeouts (2 min) allow for its size: if the TTL
// lapsed (a stall past 15 s) or a failover lost the key, every chunk
// refuses and Exclusive fails without writing anything. Views and reads
// are not held up. A process that dies inside an Exclusive leaves nothing
// written (its writes were buffered) and a freeze that lapses within 15 s,
// below the default retry bound. A second Exclusive finding the freeze
// set backs off like a conflict.
//
// go-redis's own command retries are off: a command resent on a fresh
// connection would run without the transaction's WATCHes.
//
// Import rules: rediskv imports kv, meta (sentinel errors, meta.Cached), tlsconf and go-redis;
// only the META-URL dispatcher (kvopen) and tests import rediskv.
package rediskv
