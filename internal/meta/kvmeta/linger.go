package kvmeta

import (
	"context"
	"time"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// Released records linger.
//
// The last release of an inode queues the drop of this client's open
// record ('H'), and the record is dropped only once it has been released
// for lingerFor: an Open of the inode in the meantime finds it stored
// (openState.acquire) and is a read-only transaction: one read round
// trip instead of a write (an open is never answered from Redis's
// client-side cache, whose values may be a moment old: close-to-open
// needs the open's own read). That is the reopen of a file a moment
// after its close: PostMark's reads and appends of the files it wrote, a
// build's reads of what it just wrote, an editor's save and reload.
//
// A lingering record is, for everyone else, an open: another client's
// unlink of the inode (or rename over it) keeps it as an orphan rather
// than delete it. So each flush reads the orphan marks of the lingering
// records (one round trip per lingerCheck records) and drops at once the
// records of the orphans, purging those nobody else holds, as the drop of
// a record queued at release always did: an orphan outlives its last
// close by at most a flush interval, as before. A lingering record costs
// nothing else: a file open nowhere but here-lately is still deleted by
// this client's own unlink in its transaction (the record is deleted
// with it), and a session that ends or is reclaimed drops its records,
// lingering or not. A server that takes over a resumed session (the
// process before it died or was upgraded, its queue lost with it) calls
// Adopted once it has adopted its handles: the session's records of
// inodes it does not hold are queued, due at the next flush.
//
// Bounds: at most lingerMax records linger (the others are dropped at the
// next flush, as before), so the flush's reads stay small.
const (
	lingerFor   = 30 * time.Second
	lingerMax   = 4096
	lingerCheck = 1024
)

// released is a queued drop: whether the record is known to be stored,
// and when the inode was released (the zero time: due at the next flush).
type released struct {
	recorded bool
	at       time.Time
}

// takeDue takes the queued drops that are due (released lingerFor before
// now, or beyond lingerMax) out of the queue and lists the ones left
// lingering.
func (o *openState) takeDue(now time.Time) (due, lingering []meta.Ino) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for ino, p := range o.pending {
		if now.Sub(p.at) >= lingerFor || len(lingering) >= lingerMax {
			due = append(due, ino)
			delete(o.pending, ino)
			continue
		}
		lingering = append(lingering, ino)
	}
	return due, lingering
}

// take takes those of inos still queued (not opened again) out of the
// queue.
func (o *openState) take(inos []meta.Ino) []meta.Ino {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []meta.Ino
	for _, ino := range inos {
		if _, ok := o.pending[ino]; ok {
			delete(o.pending, ino)
			out = append(out, ino)
		}
	}
	return out
}

// flushLingering is the flush loop's drop of released records: those due,
// and those of lingering records whose inodes became orphans.
func (e *Engine) flushLingering(ctx context.Context) error {
	due, lingering := e.opens.takeDue(time.Now())
	if err := e.dropRecords(ctx, due); err != nil {
		return err
	}
	if len(lingering) == 0 || e.currentSession() == 0 {
		return nil
	}
	orphans, err := e.orphansAmong(ctx, lingering)
	if err != nil {
		return wrap(err, "read orphan marks")
	}
	return e.dropRecords(ctx, e.opens.take(orphans))
}

// orphansAmong returns those of inos that have an orphan mark.
func (e *Engine) orphansAmong(ctx context.Context, inos []meta.Ino) ([]meta.Ino, error) {
	var orphans []meta.Ino
	for len(inos) > 0 {
		batch := inos[:min(lingerCheck, len(inos))]
		inos = inos[len(batch):]
		keys := make([][]byte, len(batch))
		for i, ino := range batch {
			keys[i] = orphanKey(ino)
		}
		var found []meta.Ino
		err := e.store.View(ctx, func(tx kv.Tx) error {
			found = found[:0]
			vals, err := kv.GetMany(tx, keys)
			for i, v := range vals {
				if v != nil {
					found = append(found, batch[i])
				}
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		orphans = append(orphans, found...)
	}
	return orphans, nil
}

var _ meta.OpenAdopter = (*Engine)(nil)

// Adopted implements meta.OpenAdopter: it queues the drop of every record
// of this session whose inode this client does not hold, due at the next
// flush. It finds them with an admin scan of every open record.
func (e *Engine) Adopted(ctx context.Context) error {
	id := e.currentSession()
	if id == 0 {
		return nil
	}
	inos, err := e.sessionOpens(ctx, id)
	if err != nil {
		return wrap(err, "list the session's open records")
	}
	e.opens.requeue(inos, true)
	return nil
}
