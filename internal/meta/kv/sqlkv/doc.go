// Package sqlkv implements kv.Store over SQL: SQLite (embedded, the
// default engine) and PostgreSQL, with one shared implementation and a
// small dialect file for each (sqlite.go, postgres.go).
//
// # Schema
//
// One table holds every key: shoal_kv(k, v) with k the primary key, BLOB
// in SQLite (a WITHOUT ROWID table, so rows live in the key's B-tree) and
// bytea in PostgreSQL; both compare bytewise, which is the kv key order.
// shoal_meta holds ('schema_version', N). Open creates both tables if
// absent and refuses a database whose version is newer than the binary's
// with an error wrapping meta.ErrNewerFormat (see schema.go for the
// upgrade rules).
//
// # Transactions
//
// Reads go to the database as they happen. Writes do too in SQLite; in
// PostgreSQL they are buffered and sent as one array upsert and one array
// delete before the next read and before commit (batch.go), which saves a
// network round trip per write. PostgreSQL also pipelines (pgpool.go):
// BEGIN travels with the first read, the writes with COMMIT, so an
// operation costs one round trip per dependent read (GetMany reads many
// keys in one) plus one. A read whose keys are known ahead (kv.ViewAhead:
// a lookup's directory attributes, entry, and the attributes the entry
// names) is one statement sent alone (follow.go), which the server runs in
// an implicit transaction that the session's defaults make SERIALIZABLE
// READ ONLY (pgSessionSettings in postgres.go): one round trip and one
// statement, in the transaction a View would run (GetOne's point read
// likewise); inside a transaction the same statement reads an entry and
// the attributes it names together (kv.FollowGetter). A PostgreSQL Txn
// also guesses reads (guess.go): Gets of keys whose values the store last
// committed or read are answered from memory (only keys under the
// prefixes kvmeta names through kv.Cacher: attributes and entries; keys
// it names almost always absent, kv.AbsentGuesser, are guessed absent),
// and a guard statement,
// pipelined right after BEGIN ahead of whatever the transaction sends
// first, checks every guess inside the transaction and fails it (nothing
// after it runs, COMMIT included) if one was wrong, after which fn runs
// again at once on real reads. So an operation whose reads were all
// guessed (an append to a file this mount writes, a create after the
// lookup of its name, the unlink of a file with data after the lookup of
// its name) is one round trip: BEGIN, guard, writes, COMMIT.
// Either way the database gives read-your-writes,
// rollback and ordering (the server runs pipelined statements in order
// and stops at the first error); Tx keeps the first error and reports it
// from every later call and from the transaction. Scan
// reads pages of 256 rows with
//
//	k >= lo AND k < kv.PrefixEnd(prefix) ORDER BY k LIMIT n
//
// closing each page's rows before calling fn, so fn may use the tx.
//
// Exactly one helper, Store.txn (txn.go), begins, runs fn, commits and
// retries: on a conflict (SQLite SQLITE_BUSY/SQLITE_LOCKED, PostgreSQL
// 40001 serialization_failure, 40P01 deadlock_detected and 55P03
// lock_not_available, or fn returning kv.ErrConflict) and on an unreachable server it runs fn again with
// exponential backoff and jitter, for at most Options.RetryTimeout (30 s by
// default; URL parameter retry_timeout) in total. An unreachable server is
// then reported as an error wrapping meta.ErrUnavailable; so is a conflict
// that never clears (another process holding the SQLite lock), which also
// wraps kv.ErrConflict. A COMMIT whose connection
// broke has an unknown outcome, so it is not retried (running fn twice
// could apply it twice): the caller gets meta.ErrUnavailable at once,
// unless it surely did not commit (nothing was sent, or the server refused
// a statement pipelined ahead of the COMMIT, which it then skipped: BEGIN
// on a connection whose server process was terminated), which is
// retried. View
// transactions refuse Set and Delete (the transaction then fails).
//
// # SQLite
//
// One database file in WAL mode with synchronous=NORMAL: a committed
// transaction is in the WAL and survives a process crash or kill -9; a
// power failure may lose the last transactions but never corrupts.
// SQLite's connections are the driver's own, used without database/sql
// (litepool.go: for an embedded database, database/sql's goroutines and
// conversions cost more than the query). Write transactions go through a
// single connection and begin IMMEDIATE, so in-process writers queue for
// it instead of spinning on SQLITE_BUSY, and two read-then-write
// transactions cannot deadlock on the lock upgrade. Txns that queue
// while another runs commit together (group.go): one transaction runs
// each of them in turn in a savepoint of its own, and one COMMIT writes
// every page they changed once; a member that fails is rolled back to its
// savepoint and runs again alone, as does every member if the COMMIT
// fails, so each Txn stays atomic and serializable (the members' order is
// the serial order). Views use a separate
// pool of query_only connections and run beside the writer (WAL readers
// see the snapshot of their first read). Statements are prepared once per
// connection. Other processes using the same file are handled by
// busy_timeout and then the retry loop. The checkpointer keeps the
// database file and its WAL mapped and populated (resident.go): the kernel
// does not drop mapped pages, so after drop_caches reads and commits do
// not wait for the disk, as with a metadata server that holds its data in
// memory; the pages stay reclaimable. It also keeps zeros written ahead
// of the WAL's last frame (walahead.go), so that a commit and the
// fdatasync of an fsync(2) overwrite blocks in place instead of growing
// the file. Every descriptor the package opens on the database or its
// -shm beside SQLite's own stays open until the pool's last connection
// is closed (the WAL, which SQLite does not lock, is opened and closed
// freely): closing any descriptor of a file drops every POSIX lock the
// process holds on it, and other processes read SQLite's locks to tell
// whether the database is still in use (one that takes itself for the
// last user checkpoints and deletes the WAL and the -shm under the
// connections still open). Two Stores of one database in one process
// share those locks, so closing one drops the other's (tests do that;
// a mount opens one). PostgreSQL goes through pgx's own
// pool, not database/sql (pgpool.go).
//
// SQLite keeps the keys kvmeta names (kv.Cacher: attributes and entries)
// in memory as of one commit of the database (litecache.go): a point
// read (a lookup, getattr, open or a read's attributes) is answered from
// there in one pread of the WAL index header, whose change counter every
// commit of any process raises, instead of a read transaction (some
// 30-40 µs: every commit makes SQLite drop a reader's page cache). The
// process's own commits update it (the mark read inside the transaction,
// which holds the write lock, and PRAGMA data_version after COMMIT tell
// that no other commit came between); any other commit empties it at
// the next read. A new directory's
// names are known absent from its creation (kv.FreshPrefix,
// kv.AbsentKnower) while it lasts.
//
// # PostgreSQL
//
// Every transaction is SERIALIZABLE (Views are SERIALIZABLE READ ONLY).
// REPEATABLE READ with explicit locking was rejected: the seam cannot know
// which Gets precede a write of the same key (locking all of them with
// SELECT ... FOR SHARE would serialize readers and still deadlock on the
// upgrade), and it cannot lock absent keys or ranges, so a Scan that finds
// a directory empty could race a create into it. Serializable snapshot
// isolation catches exactly those read-write dependencies, at the cost of
// occasional false-positive 40001 failures, which the txn helper retries.
// To keep those rare, sessions plan index scans only (pgSettings in
// postgres.go): a sequential scan would lock the whole table. Pipelining
// changes nothing here: the statements run in one transaction, in order,
// exactly as if sent one by one. Writes are INSERT ... ON CONFLICT (k) DO UPDATE. A META-URL may carry
// libpq parameters (sslmode, search_path to keep several volumes in one
// database, ...) which pgx passes on. For TLS that means
// sslmode=verify-full&sslrootcert=CA.pem (plus sslcert= and sslkey= for a
// client certificate): verify-full checks both the CA and the host name;
// the default, prefer, encrypts when it can but verifies nothing. A
// failed verification is explained (tlsconf.Explain) rather than reported
// as an unreachable server.
//
// # Exclusive (kv.Excluder)
//
// Store.Exclusive is a Txn that runs the dialect's exclusive statements
// right after BEGIN, on every attempt (a retry locks again). In SQLite
// there are none: every write transaction begins IMMEDIATE and so holds
// the database's single write lock from before its first read to its end,
// against this process's writers (queued for the writer connection) and
// other processes' (BEGIN waits busy_timeout, 1 s, then the retry loop
// backs off and tries again until retry_timeout, 30 s). A transaction of
// any size works: SQLite spills a large one into the WAL. In PostgreSQL,
// SET LOCAL idle_in_transaction_session_timeout = 30s and then LOCK TABLE
// shoal_kv IN EXCLUSIVE MODE (postgres.go says why that mode): writers
// block at their first write until the Exclusive ends, inside the
// statement, so with no lock_timeout or statement_timeout configured they
// wait for as long as it runs; reads go on. The lock is taken before the
// SERIALIZABLE snapshot (which the first query takes), so fn sees every
// earlier commit and nothing later. If the process running an Exclusive
// dies, its connection closes and the server rolls back at once (SQLite:
// the OS drops the dead process's lock); if its machine vanishes, the
// PostgreSQL server ends the session after 30 s idle, freeing the lock
// (and reports 25P03 to the stalled client, which retries as unavailable).
//
// # Import rules
//
// sqlkv imports kv, meta (for its sentinel errors), tlsconf (messages) and
// the SQL drivers;
// nothing in Shoal imports sqlkv except the META-URL dispatcher (kvopen)
// and tests.
package sqlkv
