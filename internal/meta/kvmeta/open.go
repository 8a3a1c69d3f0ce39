package kvmeta

import (
	"context"
	"sync"
	"syscall"
	"time"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// Open files.
//
// A file open anywhere outlives the unlink (or rename over) of its last
// name until the last session holding it open lets go, as on one local
// disk. Each session records the regular files it holds open:
//
//	'H' ino session → ""    ino is open in session
//
// so that "is it open anywhere?" is one 9-byte prefix scan inside the
// unlink's transaction.
//
// The last unlink of a file that no session records open (and that this
// client does not hold: the vfs's check and the counts below) deletes the
// inode in the same transaction; otherwise it becomes an orphan ('O'). An
// orphan is purged by whoever drops the last record: a client's deferred
// release, Purge, or the end or reclaim of the last holding session.
//
// The unlink's scan is skipped when the unlinking client created the
// file open itself and no other client recorded it open since: an Open by
// any other client (and a create of an existing name, and re-recording
// after a lost session) sets the inode's flagOpened, so without the flag
// only the creator's record can exist, and the creator knows whether it
// is still stored (openState.created: stored while held or its drop is
// pending, gone after; the creator's own later Opens keep to that and
// leave the flag clear). That is the create, close, unlink of temporary
// files and of the benchmarks, also when the creator reopened the file
// in between (PostMark's reads and appends).
//
// Cost. A client records an inode once however many handles it opens
// (openState counts them in memory), in the transaction that already
// writes when there is one (Mknod with MknodRequest.Open). An Open of an
// inode this client already holds, or released less than lingerFor ago
// (the record is still there: linger.go), is a read-only transaction.
// Release writes nothing: the last release of an inode queues the drop of
// its record, and the flush loop drops the records that lingered long
// enough (and those of orphans) in batches, one transaction per batch,
// every Options.FlushInterval. A record left
// standing a little longer only delays a purge; one a crash leaves behind
// is dropped when its session is reclaimed. Measured on SQLite (2 loaded
// cores): the record adds about 7 µs to a create of about 40, the batched
// drop about 4 µs per file; an unlink of a file the client created itself
// reads nothing more (above), another unlink reads one more range (about
// one Get). The first Open of an existing file in a mount becomes a write
// transaction (the record and the flag).
//
// Alternatives rejected: dropping the record in its own transaction at
// every last close (one more write per create-and-close, the hottest
// path); one record per handle (a write per open); a second key per
// record indexing it by session, like the 'o' and 'q' indexes, so that
// ending a session reads only its own records: on SQLite each key of a
// create dirties one more B-tree page, and the second key cost as much as
// the first (measured: 6 µs more per create, 10 per unlink), while ending a
// session is rare and reads every open record of the volume, which are
// few (files open right now); keying records by session first (an unlink
// would read one key per live session, and conflict with heartbeats to
// learn them).
//
// Races. Every transaction that drops a record or decides an inode is
// open nowhere reads the records it acts on (or, on the creator's fast
// path, the inode's flagOpened, which any other client's recording
// writes) and checks this client's counts inside the transaction; every
// Open that writes a record reads the inode. So an Open racing with a
// drop or an unlink conflicts with it in the store, and one of them runs
// again. Within one client, an Open that reuses a record (a read-only
// transaction) and an unlink of the same inode are ordered only by the
// counts, read in the unlink's transaction, as they were by the vfs's
// check before records existed: in a narrow window the open can win and
// still lose the inode.

var _ meta.OpenTracker = (*Engine)(nil)

func openKey(ino meta.Ino, id meta.SessionID) []byte {
	return be.AppendUint64(inoKey(kindOpen, ino), uint64(id))
}

// openState is this client's view of the inodes it holds open.
type openState struct {
	mu   sync.Mutex
	held map[meta.Ino]*heldInode
	// pending: released, drop the record once it has lingered
	// (linger.go); the value says whether the record is known to be
	// stored, and since when it is released.
	pending map[meta.Ino]released
	// created: inodes this client created open (Mknod with Open), whose
	// record it wrote and so knows about: it is stored while held or
	// pending, and gone after. At most maxCreated (then unknown).
	created map[meta.Ino]bool
}

// maxCreated bounds openState.created; past it, unlinks scan.
const maxCreated = 1 << 16

// noteCreated remembers that this client created ino with its record.
func (o *openState) noteCreated(ino meta.Ino) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.created == nil {
		o.created = map[meta.Ino]bool{}
	}
	if len(o.created) < maxCreated {
		o.created[ino] = true
	}
}

// madeHere reports whether this client created ino (and so knows that no
// other session can hold a record of it unless flagOpened is set).
func (o *openState) madeHere(ino meta.Ino) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.created[ino]
}

// forget drops what this client knows of a deleted inode.
func (o *openState) forget(ino meta.Ino) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.created, ino)
}

// heldInode counts the opens of one inode not yet released.
type heldInode struct {
	n        int
	recorded bool // this session's record is known to be stored
}

// acquire counts one more open of ino and reports whether a record must
// be written: not when one is known to be stored, or is still stored
// because its drop is queued (the queued drop is then cancelled).
func (o *openState) acquire(ino meta.Ino) (write bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.held == nil {
		o.held = map[meta.Ino]*heldInode{}
	}
	h := o.held[ino]
	if h == nil {
		h = &heldInode{recorded: o.pending[ino].recorded}
		delete(o.pending, ino)
		o.held[ino] = h
	}
	h.n++
	return !h.recorded
}

// queue queues ino's drop; the caller holds mu.
func (o *openState) queue(ino meta.Ino, recorded bool) {
	if o.pending == nil {
		o.pending = map[meta.Ino]released{}
	}
	p, ok := o.pending[ino]
	if !ok {
		p.at = time.Now()
	}
	p.recorded = p.recorded || recorded
	o.pending[ino] = p
}

// recorded notes that ino's record is stored.
func (o *openState) recorded(ino meta.Ino) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if h := o.held[ino]; h != nil {
		h.recorded = true
	}
}

// release counts one open of ino less; the last queues the record's drop.
func (o *openState) release(ino meta.Ino) {
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.held[ino]
	if h == nil {
		return
	}
	if h.n--; h.n <= 0 {
		delete(o.held, ino)
		o.queue(ino, h.recorded)
	}
}

// unrecorded notes that ino's record is (being) dropped while no open
// holds it: a queued drop stays queued, but the next Open writes a record
// again instead of reusing the one that was queued for dropping.
func (o *openState) unrecorded(ino meta.Ino) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if p, ok := o.pending[ino]; ok {
		p.recorded = false
		o.pending[ino] = p
	}
}

// holds reports whether this client holds ino open.
func (o *openState) holds(ino meta.Ino) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.held[ino] != nil
}

// takePending returns the queued drops and empties the queue.
func (o *openState) takePending() []meta.Ino {
	o.mu.Lock()
	defer o.mu.Unlock()
	inos := make([]meta.Ino, 0, len(o.pending))
	for ino := range o.pending {
		inos = append(inos, ino)
	}
	clear(o.pending)
	return inos
}

// requeue queues the drops of those of inos not held open, due at the
// next flush: after a failed flush (unless reopened meanwhile; recorded
// false, since this client's own unlink may have deleted a record: a
// reopen then writes it again), or the records a predecessor left
// (Adopted; recorded true).
func (o *openState) requeue(inos []meta.Ino, recorded bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.pending == nil {
		o.pending = map[meta.Ino]released{}
	}
	for _, ino := range inos {
		if o.held[ino] == nil {
			o.pending[ino] = released{recorded: recorded}
		}
	}
}

// heldInodes lists the inodes held open, all marked not recorded (for a
// new session, which has no records yet).
func (o *openState) heldInodes() []meta.Ino {
	o.mu.Lock()
	defer o.mu.Unlock()
	inos := make([]meta.Ino, 0, len(o.held))
	for ino, h := range o.held {
		h.recorded = false
		inos = append(inos, ino)
	}
	clear(o.pending)
	return inos
}

// reset forgets everything (the session ended).
func (o *openState) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	clear(o.held)
	clear(o.pending)
	clear(o.created)
}

// Open implements meta.OpenTracker. A meta.Opened in ctx learns whether
// the inode has no xattrs (flagXattrs clear), from the attributes read,
// and the list of a file's first chunk if the chunk cache holds it at the
// generation read (what ReadChunk would answer at the same instant, so a
// reader opened now need not ask).
func (e *Engine) Open(ctx context.Context, ino meta.Ino, mask uint32) (meta.Attr, error) {
	write := e.opens.acquire(ino) && e.currentSession() != 0
	var out meta.Attr
	var noXattrs, has0 bool
	var chunk0 []meta.Slice
	fn := func(t *txn) error {
		a, err := t.attr(ino)
		if err != nil {
			return err
		}
		if a.Type == meta.TypeDir && mask&meta.MayWrite != 0 {
			return syscall.EISDIR
		}
		if mask&meta.MayWrite != 0 && t.frozen(ino) {
			return syscall.EROFS
		}
		if err := t.access(ino, a, mask&7); err != nil {
			return err
		}
		if write {
			t.recordOpen(ino, a, t.opens.madeHere(ino))
		}
		out, noXattrs = *a, t.flags[ino]&flagXattrs == 0
		chunk0, has0 = nil, false
		if a.Type == meta.TypeFile && a.Length > 0 {
			chunk0, has0 = t.cachedList(chunkRef{ino, 0})
		}
		return nil
	}
	var err error
	if write {
		err = e.update(ctx, fn)
	} else {
		// Only the attributes (and an ACL, rarely): read ahead.
		err = e.viewAhead(ctx, nil, [][]byte{attrKey(ino)}, fn)
	}
	if err != nil {
		e.opens.release(ino)
		return meta.Attr{}, wrap(err, "open %d", ino)
	}
	if write {
		e.opens.recorded(ino)
	}
	if o := meta.OpenedTo(ctx); o != nil {
		o.NoXattrs = noXattrs // an inode without flagXattrs never had one
		o.Chunk0, o.HasChunk0 = chunk0, has0
	}
	return out, nil
}

// Release implements meta.OpenTracker. It writes nothing: see the flush.
func (e *Engine) Release(ctx context.Context, ino meta.Ino) error {
	e.opens.release(ino)
	return nil
}

// recordOpen stores that this client's session holds regular file ino
// open (other types never become orphans). Unless the record is one this
// client knows the fate of (own: the transaction created ino, or this
// client did, openState.created), the inode is flagged flagOpened.
func (t *txn) recordOpen(ino meta.Ino, a *meta.Attr, own bool) {
	if t.session == 0 || a.Type != meta.TypeFile {
		return
	}
	t.tx.Set(openKey(ino, t.session), nil)
	if !own && t.flags[ino]&flagOpened == 0 {
		t.flags[ino] |= flagOpened
		t.dirty[ino] = true // a flag, not a change: allowed on a frozen inode
	}
}

// dropOpen deletes session id's record of ino.
func (t *txn) dropOpen(ino meta.Ino, id meta.SessionID) {
	t.tx.Delete(openKey(ino, id))
}

// openSessions lists the sessions that record ino open.
func (t *txn) openSessions(ino meta.Ino) ([]meta.SessionID, error) {
	var ids []meta.SessionID
	err := t.tx.Scan(inoKey(kindOpen, ino), nil, 0, func(k, _ []byte) bool {
		if len(k) == 17 {
			ids = append(ids, meta.SessionID(be.Uint64(k[9:])))
		}
		return true
	})
	return ids, err
}

// openElsewhere reports whether a session other than this client's
// records ino open; this client's own record, which this client no longer
// needs (the caller checked), is dropped on the way.
func (t *txn) openElsewhere(ino meta.Ino) (bool, error) {
	ids, err := t.openSessions(ino)
	if err != nil {
		return false, err
	}
	elsewhere := false
	for _, id := range ids {
		if id == t.session {
			t.dropOpen(ino, id)
			t.opens.unrecorded(ino)
			continue
		}
		elsewhere = true
	}
	return elsewhere, nil
}

// purgeUnused deletes orphan ino unless a session other than ignore
// records it open (ignore's record is being dropped in this transaction).
// It is a no-op for an inode that is gone or still has links.
func (t *txn) purgeUnused(ino meta.Ino, ignore meta.SessionID) error {
	a, err := t.attr(ino)
	if err == syscall.ENOENT {
		return nil
	}
	if err != nil || a.Nlink > 0 {
		return err
	}
	ids, err := t.openSessions(ino)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if id != ignore {
			return nil
		}
	}
	return t.purgeOrphan(ino, a)
}

// releaseBatch is how many queued drops one flush transaction carries.
const releaseBatch = 256

// flushReleases drops the records of every inode this client released,
// lingering or not (at Close).
func (e *Engine) flushReleases(ctx context.Context) error {
	return e.dropRecords(ctx, e.opens.takePending())
}

// dropRecords drops the records of inos, released by this client, a batch
// per transaction, purging those that were orphans nobody else holds. A
// failed batch is queued again for the next flush.
func (e *Engine) dropRecords(ctx context.Context, inos []meta.Ino) error {
	if e.currentSession() == 0 {
		return nil
	}
	for len(inos) > 0 {
		batch := inos[:min(releaseBatch, len(inos))]
		if err := e.update(ctx, func(t *txn) error { return t.dropReleased(batch, e.opens.holds) }); err != nil {
			e.opens.requeue(inos, false)
			return wrap(err, "drop open records")
		}
		inos = inos[len(batch):]
	}
	return nil
}

// dropReleased drops this session's records of inos, except those held
// open again, and purges the orphans among them that nobody holds. It
// reads each record and orphan mark (one round trip for the batch) so that
// an Open writing a record concurrently conflicts with it.
func (t *txn) dropReleased(inos []meta.Ino, holds func(meta.Ino) bool) error {
	if t.session == 0 {
		return nil
	}
	keys := make([][]byte, 0, 2*len(inos))
	for _, ino := range inos {
		keys = append(keys, openKey(ino, t.session), orphanKey(ino))
	}
	vals, err := kv.GetMany(t.tx, keys)
	if err != nil {
		return err
	}
	for i, ino := range inos {
		if vals[2*i] == nil || holds(ino) {
			continue
		}
		t.dropOpen(ino, t.session)
		if vals[2*i+1] == nil {
			continue
		}
		if err := t.purgeUnused(ino, t.session); err != nil {
			return err
		}
	}
	return nil
}

// releaseOpens drops the open records of session id (ended or being
// reclaimed), one inode per transaction, purging the orphans no session
// holds open any more. It finds them with an admin scan of every open
// record (see the layout note above).
func (e *Engine) releaseOpens(ctx context.Context, id meta.SessionID) error {
	opened, err := e.sessionOpens(ctx, id)
	if err != nil {
		return err
	}
	for _, ino := range opened {
		err := e.update(ctx, func(t *txn) error {
			t.dropOpen(ino, id)
			return t.purgeUnused(ino, id)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// recordHeld records the inodes this client holds open under its current
// session: after a reclaim took the old session's records away.
func (e *Engine) recordHeld(ctx context.Context) error {
	inos := e.opens.heldInodes()
	for len(inos) > 0 {
		batch := inos[:min(releaseBatch, len(inos))]
		inos = inos[len(batch):]
		err := e.update(ctx, func(t *txn) error {
			for _, ino := range batch {
				a, err := t.attr(ino)
				if err == syscall.ENOENT {
					continue
				}
				if err != nil {
					return err
				}
				t.recordOpen(ino, a, false)
			}
			return nil
		})
		if err != nil {
			return wrap(err, "record open files")
		}
		for _, ino := range batch {
			e.opens.recorded(ino)
		}
	}
	return nil
}

// sessionOpens lists the inodes session id holds open records of, with an
// admin scan of every open record (see the layout note above).
func (e *Engine) sessionOpens(ctx context.Context, id meta.SessionID) ([]meta.Ino, error) {
	var inos []meta.Ino
	err := e.store.View(ctx, func(tx kv.Tx) error {
		inos = inos[:0]
		return tx.Scan([]byte{kindOpen}, nil, 0, func(k, _ []byte) bool {
			if len(k) == 17 && meta.SessionID(be.Uint64(k[9:])) == id {
				inos = append(inos, meta.Ino(be.Uint64(k[1:])))
			}
			return true
		})
	})
	return inos, err
}
