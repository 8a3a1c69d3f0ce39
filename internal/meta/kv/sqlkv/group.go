package sqlkv

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"shoal/internal/meta/kv"
)

// Group commit (SQLite). SQLite has one writer: a mount's concurrent
// operations (the FUSE server runs requests in parallel) queue for it and
// commit one by one, each paying BEGIN IMMEDIATE, its own WAL frames for
// every page it changed (the pages of one directory's entries and inodes,
// over and over) and COMMIT's lock and wal-index upkeep. So the Txns that
// queue while one transaction runs are run together in the next: one
// BEGIN IMMEDIATE, then each member's fn in turn inside a savepoint of its
// own, then one COMMIT, which writes each page changed once.
//
// The members run one after another, each seeing the writes of those
// before it, exactly as if each had waited for the writer and committed
// alone in that order; readers (Views, on their own connections) see
// none of the group's writes or all of them, which is one of the states
// that serial order passes through. So every operation stays atomic and
// serializable. A member whose fn fails (an error, kv.ErrConflict, a
// failed statement, a panic) is rolled back to its savepoint, which
// undoes its writes and nothing else, and is run again alone afterwards,
// on the ordinary path (Store.txn): its error is then one it gets on its
// own, not one that depends on group members whose commit might still
// fail. If the group's COMMIT fails (or SQLite rolled the whole
// transaction back after an I/O error), nothing of it committed and
// every member runs again alone, so one member can neither fail nor
// corrupt another. fn may run more than once, as with any retry; what it
// reads is committed only once its Txn returns nil (kvmeta's chunk cache
// therefore caches only after that: kvmeta/chunkcache.go).
//
// Who runs a group: Txns queue in the committer; the first to find no
// leader leads. It takes the queue (itself first, at most maxGroup), runs
// the members' fns on its own goroutine (no goroutine switch per member;
// the others sleep until told their outcome), commits, then hands the
// lead to the first of those that queued meanwhile, and only then tells
// the members how they fared. A leader that finds only itself queued runs
// its Txn's first attempt as the ordinary path would, so a Txn without
// company costs what it did; Txns that arrive meanwhile queue for the
// next group, so groups form exactly when Txns wait for one another.
// Exclusive transactions and Views never join a group.
//
// Measured on the 2-core test machine (shared, load 20-30 at the time):
// four goroutines creating files through kvmeta took 95 µs a create in
// groups and 131 µs one by one (BenchmarkSQLiteParallelCreate, medians of
// five interleaved runs; 81 against 130 µs for the bare kv shape,
// BenchmarkSQLiteTxnParallel). Through a FUSE mount with four creators
// the gain was lost in the noise: there about a quarter of the Txns found
// the writer busy (groups of two or three), the rest of a create's time
// being the kernel's, go-fuse's and the client's.

// maxGroup bounds the members of one group: a member waits for the ones
// before it to run.
const maxGroup = 64

// committer queues the Txns waiting to run in a group.
type committer struct {
	mu      sync.Mutex
	queue   []*member
	leading bool         // a leader is running (or has been handed the lead)
	grouped atomic.Int64 // members committed in groups, for tests
}

// member is one Txn in the committer's queue.
type member struct {
	ctx  context.Context
	fn   func(kv.Tx) error
	wake chan outcome // buffered 1: the leader's word
}

// outcome is what became of a member.
type outcome struct {
	kind  outcomeKind
	err   error // kind == outcomeDone: the Txn's result
	panic any   // kind == outcomePanic: the value fn panicked with
}

type outcomeKind int

const (
	outcomeAlone     outcomeKind = iota // not committed: run alone
	outcomeCommitted                    // committed in a group
	outcomeDone                         // ran alone as leader: err is final
	outcomeLead                         // lead the next group
	outcomePanic                        // fn panicked: panic in the caller
)

// groupTxn runs a Txn through the committer (SQLite).
func (s *Store) groupTxn(ctx context.Context, fn func(kv.Tx) error) error {
	if s.closed.Load() {
		return errClosed
	}
	m := &member{ctx: ctx, fn: fn, wake: make(chan outcome, 1)}
	g := s.group
	g.mu.Lock()
	g.queue = append(g.queue, m)
	lead := !g.leading
	g.leading = true
	g.mu.Unlock()
	var o outcome
	if lead {
		o = s.lead()
	} else if o = <-m.wake; o.kind == outcomeLead {
		o = s.lead()
	}
	switch o.kind {
	case outcomeCommitted:
		return nil
	case outcomeDone:
		return o.err
	case outcomePanic:
		panic(o.panic)
	}
	return s.txn(ctx, modeWrite, fn)
}

// lead takes the queue (the leader is its first member), runs it as a
// group if it has company, hands the lead on and tells the other members
// their outcomes; it returns the leader's own. The hand-off is deferred:
// a panic while the leader runs alone (its own fn's, which then goes on
// up its own stack) must not leave the lead taken.
func (s *Store) lead() outcome {
	g := s.group
	g.mu.Lock()
	n := min(len(g.queue), maxGroup)
	batch := append([]*member(nil), g.queue[:n]...)
	g.queue = append(g.queue[:0], g.queue[n:]...)
	g.mu.Unlock()
	outcomes := make([]outcome, len(batch)) // outcomeAlone
	defer func() {
		g.mu.Lock()
		if len(g.queue) > 0 {
			g.queue[0].wake <- outcome{kind: outcomeLead}
		} else {
			g.leading = false
		}
		g.mu.Unlock()
		for i, m := range batch[1:] {
			m.wake <- outcomes[i+1]
		}
	}()
	if len(batch) > 1 {
		s.runGroup(batch, outcomes)
		return outcomes[0]
	}
	// Alone: the first attempt of the ordinary path, still leading so
	// that the Txns arriving meanwhile queue here to form the next group.
	// A retry (after a backoff) runs without the lead.
	m := batch[0]
	if class, err := s.attempt(m.ctx, modeWrite, m.fn); err == nil || (class == kv.Fatal && m.ctx.Err() == nil) {
		return outcome{kind: outcomeDone, err: err}
	}
	return outcome{kind: outcomeAlone}
}

// runGroup runs batch in one transaction and sets the outcome of each
// member that committed or panicked; the others stay outcomeAlone.
func (s *Store) runGroup(batch []*member, outcomes []outcome) {
	c, err := s.pool.begin(batch[0].ctx, false)
	if err != nil {
		return // each member begins (and reports failing to) alone
	}
	defer c.rollback()
	var lw *liteWrites
	lt, ok := c.(*liteTx)
	if ok && s.lite != nil {
		lw = s.lite.begin(lt.lc.dataVersion)
		defer s.lite.end()
	}
	if !ok || !s.runMembers(lt, batch, outcomes, lw) || lt.lc.c.AutoCommit() || c.commit() != nil {
		// Nothing committed. (SQLite rolls the whole transaction back
		// after some errors, a full disk or an I/O error: AutoCommit.)
		for i := range outcomes {
			if outcomes[i].kind == outcomeCommitted {
				outcomes[i].kind = outcomeAlone
			}
		}
		return
	}
	if lw != nil {
		s.lite.committed(lw)
	}
	for _, o := range outcomes {
		if o.kind == outcomeCommitted {
			s.group.grouped.Add(1)
		}
	}
}

// runMembers runs each member in a savepoint, marking the ones whose fn
// succeeded committed (provisionally: the caller commits), adding their
// writes to lw (nil: no cache). It reports false when a member committed
// none or a savepoint statement failed.
func (s *Store) runMembers(lt *liteTx, batch []*member, outcomes []outcome, lw *liteWrites) bool {
	committed := 0
	for i, m := range batch {
		if m.ctx.Err() != nil {
			continue // alone, it reports the context's error
		}
		if lt.lc.group(groupSavepoint) != nil {
			return false
		}
		t := &tx{ctx: m.ctx, c: lt, real: true}
		if lw != nil {
			t.lite, t.lg = s.lite, lw
			t.lw = lw.member()
		}
		ok, panicked, value := runMember(m.fn, t)
		if ok {
			if lt.lc.group(groupRelease) != nil {
				return false
			}
			if lw != nil {
				lw.merge(t.lw)
			}
			outcomes[i].kind = outcomeCommitted
			committed++
			continue
		}
		if panicked {
			outcomes[i] = outcome{kind: outcomePanic, panic: value}
		}
		if lt.lc.group(groupRollbackTo) != nil || lt.lc.group(groupRelease) != nil {
			return false
		}
	}
	return committed > 0
}

// runMember runs fn on t: ok when fn returned nil and no statement
// failed; a panic is recovered and returned.
func runMember(fn func(kv.Tx) error, t *tx) (ok, panicked bool, value any) {
	defer func() {
		if r := recover(); r != nil {
			ok, panicked, value = false, true, r
		}
	}()
	err := fn(t)
	return err == nil && t.err == nil, false, nil
}

// The statements around a group's members, prepared on the writer.
const (
	groupSavepoint = iota
	groupRelease
	groupRollbackTo
	numGroupStmts
)

var groupQueries = [numGroupStmts]string{
	groupSavepoint:  "SAVEPOINT shoal_member",
	groupRelease:    "RELEASE shoal_member",
	groupRollbackTo: "ROLLBACK TO shoal_member",
}

// group runs one of the group statements.
func (lc *liteConn) group(i int) error {
	if lc.groupStmts[i] == nil {
		return fmt.Errorf("sqlkv: group statements not prepared")
	}
	_, err := lc.groupStmts[i].Exec(nil)
	return err
}
