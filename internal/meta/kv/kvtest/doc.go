// Package kvtest is the conformance suite every kv.Store backend passes.
// A backend joins it in a few lines:
//
//	func TestConformance(t *testing.T) {
//		kvtest.Run(t, func(t *testing.T) kv.Store { return newEmptyStore(t) })
//	}
//
// A backend opened from URLs joins with kvtest.RunURL(t, Open, newURL)
// instead, which also opens a peer: a second store on the same database or
// namespace, standing in for another machine (WithPeer does the same for a
// custom factory; without one, the peer is the store itself).
//
// What the suite pins down, beyond the plain reading of kv.Store:
//   - Get returns nil for an absent key and a non-nil (possibly empty)
//     slice for a present one; returned slices belong to the caller, and
//     buffers passed to Set may be reused by the caller right after Set.
//   - A transaction reads its own writes, in Get and in Scan (writes and
//     deletes merged in key order).
//   - Scan with a prefix of at least kv.ScanPrefixLen bytes is ordered
//     bytewise (0x00 and 0xff included), honours after and limit, stops
//     when fn returns false, and allows tx.Get from inside fn. Shorter
//     prefixes are checked as unordered sets only.
//   - Txn is serializable: concurrent read-increment-write transactions
//     lose no update, and write skew is impossible. View sees one
//     consistent state and refuses writes.
//   - kv.Exclusive holds every other writer off, the peer's included:
//     while its fn reads slowly, the committed state (read outside fn
//     through the peer) does not move, fn sees one state, and the writers
//     wait and go on without an error; the writers' log shows the
//     Exclusive's marker unseen by every transaction before it and seen by
//     every one after. An Exclusive reading and writing 50,000 keys in
//     paged Scans commits.
//   - fn may run more than once. An optimistic backend (Redis) may run fn
//     on a mix of states in an attempt it then discards, so the suite
//     checks what the final run captured after Txn or View returns, never
//     inside fn (fn must have no side effects besides tx).
//
// Each subtest calls newStore for a fresh, empty store and closes it when
// the subtest ends (before newStore's own t.Cleanup functions run, so a
// factory may drop its database there). Close may therefore be called twice
// on a store; the suite ignores the second result.
//
// Import rules: kvtest imports kv and the standard library only, so any
// backend's tests may import it.
package kvtest
