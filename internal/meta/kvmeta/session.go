package kvmeta

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// Sessions.
//
// A session is one key, 'E' session → JSON of meta.SessionInfo plus a
// "reclaiming" mark. What a session holds is indexed under it with 9-byte
// prefixes, so ending it is an ordered scan, not a volume scan:
//
//	'o' session ino → ""    orphan created by the session (see 'O')
//	'q' session ino → ""    the session holds locks on ino
//
// Open files are recorded per inode ('H' ino session, see open.go), not
// indexed per session: ending a session scans them all.
//
// Ending a session (EndSession, or ReclaimSessions for a dead one) first
// marks it reclaiming, which makes its heartbeats fail with
// meta.ErrSessionLost; then it releases the locks and open records and
// purges the orphans no other session holds open, one inode per
// transaction; then it deletes the session key. A reclaimer
// that dies half-way leaves the mark, and the next one finishes the job.
//
// # When a session is dead
//
// Only on one clock, by the session's own rule: the record keeps the
// timeout its client runs with, heartbeats stamp the engine's clock
// (kv.Now: PostgreSQL's clock_timestamp(), Redis TIME, the local clock for
// SQLite), and a reclaimer reads that same clock and ends a session only
// when now − heartbeat > the session's own timeout, checked again inside
// the transaction that marks it. The reclaimer's own timeout and clock
// play no part (its timeout is the fallback for records written before
// they kept one: max(it, meta.LegacySessionTimeout)). Rejected: stamping
// each client's local clock (two machines' clocks compared, so a skewed
// clock reclaims a live session) and judging by the reclaimer's timeout (a
// 15 s mount reclaims a 60 s one after 15 s). Both let a lock have two
// holders; the client keeps its side of the bargain by fencing itself
// before its own timeout runs out (vfs, fence.go).

var (
	_ meta.Sessions        = (*Engine)(nil)
	_ meta.SessionReporter = (*Engine)(nil)
	_ meta.EngineClock     = (*Engine)(nil)
)

// sessionRecord is the stored form of a session.
type sessionRecord struct {
	meta.SessionInfo
	Reclaiming bool `json:"reclaiming,omitempty"`
}

func sessionKey(id meta.SessionID) []byte { return inoKey(kindSession, meta.Ino(id)) }

func sessionIndexKey(kind byte, id meta.SessionID, ino meta.Ino) []byte {
	return be.AppendUint64(inoKey(kind, meta.Ino(id)), uint64(ino))
}

// BeginSession registers the client. Orphans, locks and open records this
// Engine makes from now on belong to the new session; files it already
// holds open are recorded under it (an error doing so is returned, but the
// session is begun).
func (e *Engine) BeginSession(ctx context.Context, info meta.SessionInfo) (meta.SessionID, error) {
	var id meta.SessionID
	now, err := e.engineNow(ctx)
	if err != nil {
		return 0, wrap(err, "begin session")
	}
	err = e.store.Txn(ctx, func(tx kv.Tx) error {
		raw, err := tx.Get(counterKey(counterNextSession))
		if err != nil {
			return err
		}
		id = meta.SessionID(max(decodeInt(raw), 1))
		tx.Set(counterKey(counterNextSession), encodeInt(int64(id)+1))
		info.ID, info.Started, info.Heartbeat = id, e.localNow(), now
		return putSession(tx, sessionRecord{SessionInfo: info})
	})
	if err != nil {
		return 0, wrap(err, "begin session")
	}
	e.session.Store(uint64(id))
	// A client starting over after losing its session records again the
	// files it still holds open (the reclaim dropped the old records).
	return id, e.recordHeld(ctx)
}

// ResumeSession implements meta.SessionResumer.
func (e *Engine) ResumeSession(ctx context.Context, id meta.SessionID, info meta.SessionInfo) error {
	now, err := e.engineNow(ctx)
	if err != nil {
		return wrap(err, "resume session %d", id)
	}
	err = e.store.Txn(ctx, func(tx kv.Tx) error {
		rec, err := getSession(tx, id)
		if err != nil {
			return err
		}
		if rec == nil || rec.Reclaiming {
			return meta.ErrSessionLost
		}
		rec.Heartbeat, rec.PID, rec.Version = now, info.PID, info.Version
		return putSession(tx, *rec)
	})
	if err != nil {
		return wrap(err, "resume session %d", id)
	}
	e.session.Store(uint64(id))
	return nil
}

func putSession(tx kv.Tx, rec sessionRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	tx.Set(sessionKey(rec.ID), data)
	return nil
}

func getSession(tx kv.Tx, id meta.SessionID) (*sessionRecord, error) {
	raw, err := tx.Get(sessionKey(id))
	if err != nil || raw == nil {
		return nil, err
	}
	var rec sessionRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("bad session record %d: %w", id, err)
	}
	return &rec, nil
}

// engineNow reads the engine's clock, which every session time is on.
func (e *Engine) engineNow(ctx context.Context) (time.Time, error) {
	now, err := kv.Now(ctx, e.store)
	return now.UTC(), err
}

// EngineNow reads the engine's clock (kv.Now), the one session times
// are on.
func (e *Engine) EngineNow(ctx context.Context) (time.Time, error) { return e.engineNow(ctx) }

// localNow is this client's wall clock (Options.ClockSkew applied), for
// what it says of itself: SessionInfo.Started.
func (e *Engine) localNow() time.Time { return time.Now().Add(e.opts.ClockSkew).UTC() }

// sessionTimeout is how long rec lives without a heartbeat: its own
// timeout, or for a record without one the larger of fallback and
// meta.LegacySessionTimeout.
func sessionTimeout(rec meta.SessionInfo, fallback time.Duration) time.Duration {
	if rec.Timeout > 0 {
		return rec.Timeout
	}
	return max(fallback, meta.LegacySessionTimeout)
}

// expired reports whether rec is dead at engine time now.
func expired(rec meta.SessionInfo, now time.Time, fallback time.Duration) bool {
	return now.Sub(rec.Heartbeat) > sessionTimeout(rec, fallback)
}

// currentSession is the session this Engine works for (0: none).
func (e *Engine) currentSession() meta.SessionID { return meta.SessionID(e.session.Load()) }

// Heartbeat rewrites the session's heartbeat time with the engine's
// clock, read after the call started (so the stamp is never older than the
// caller's start, which is what the caller's fence counts from).
func (e *Engine) Heartbeat(ctx context.Context) error {
	id := e.currentSession()
	if id == 0 {
		return meta.ErrSessionLost
	}
	now, err := e.engineNow(ctx)
	if err != nil {
		return wrap(err, "heartbeat session %d", id)
	}
	err = e.store.Txn(ctx, func(tx kv.Tx) error {
		rec, err := getSession(tx, id)
		if err != nil {
			return err
		}
		if rec == nil || rec.Reclaiming {
			return meta.ErrSessionLost
		}
		rec.Heartbeat = now
		if r := e.report.Load(); r != nil {
			rec.Report = r
		}
		return putSession(tx, *rec)
	})
	if errors.Is(err, meta.ErrSessionLost) {
		// Nothing more may be attributed to a session that is gone.
		e.session.CompareAndSwap(uint64(id), 0)
	}
	return wrap(err, "heartbeat session %d", id)
}

// SetSessionReport keeps r for the next Heartbeat, which stores it in the
// session record it rewrites anyway: publishing adds no write.
func (e *Engine) SetSessionReport(r meta.SessionReport) { e.report.Store(&r) }

// EndSession ends this Engine's session.
func (e *Engine) EndSession(ctx context.Context) error {
	id := e.currentSession()
	if id == 0 {
		return nil
	}
	// The client holds nothing open any more: its orphans go now.
	e.opens.reset()
	if _, err := e.endSession(ctx, id, false, 0); err != nil {
		return err
	}
	e.session.CompareAndSwap(uint64(id), 0)
	return nil
}

// ListSessions scans the session keys.
func (e *Engine) ListSessions(ctx context.Context) ([]meta.SessionInfo, error) {
	var out []meta.SessionInfo
	err := e.store.View(ctx, func(tx kv.Tx) error {
		out = out[:0]
		var derr error
		err := tx.Scan([]byte{kindSession}, nil, 0, func(_, v []byte) bool {
			var rec sessionRecord
			derr = json.Unmarshal(v, &rec)
			out = append(out, rec.SessionInfo)
			return derr == nil
		})
		return firstErr(err, derr)
	})
	slices.SortFunc(out, func(a, b meta.SessionInfo) int { return cmp.Compare(a.ID, b.ID) })
	return out, wrap(err, "list sessions")
}

// ReclaimSessions ends the other sessions that outlived their own timeout
// on the engine's clock.
func (e *Engine) ReclaimSessions(ctx context.Context, fallback time.Duration) (int, error) {
	sessions, err := e.ListSessions(ctx)
	if err != nil {
		return 0, err
	}
	now, err := e.engineNow(ctx)
	if err != nil {
		return 0, wrap(err, "reclaim sessions")
	}
	ended := 0
	for _, s := range sessions {
		if s.ID == e.currentSession() || !expired(s, now, fallback) {
			continue
		}
		ok, err := e.endSession(ctx, s.ID, true, fallback)
		if err != nil {
			return ended, err
		}
		if ok {
			ended++
		}
	}
	return ended, nil
}

// endSession marks session id reclaiming (when reclaim, only if it is
// still dead, judged as ReclaimSessions does on a fresh reading of the
// engine's clock), releases what it holds and deletes it, and reports
// whether it did. Safe to run from several clients at once.
func (e *Engine) endSession(ctx context.Context, id meta.SessionID, reclaim bool, fallback time.Duration) (bool, error) {
	var now time.Time
	if reclaim {
		var err error
		if now, err = e.engineNow(ctx); err != nil {
			return false, wrap(err, "end session %d", id)
		}
	}
	err := e.store.Txn(ctx, func(tx kv.Tx) error {
		rec, err := getSession(tx, id)
		if err != nil || rec == nil || rec.Reclaiming {
			return err
		}
		if reclaim && !expired(rec.SessionInfo, now, fallback) {
			return errStillAlive
		}
		rec.Reclaiming = true
		return putSession(tx, *rec)
	})
	if err == errStillAlive {
		return false, nil
	}
	if err == nil {
		err = e.releaseSession(ctx, id)
	}
	if err == nil {
		err = e.store.Txn(ctx, func(tx kv.Tx) error { tx.Delete(sessionKey(id)); return nil })
	}
	return err == nil, wrap(err, "end session %d", id)
}

// errStillAlive stops a reclaim of a session that beat meanwhile.
var errStillAlive = fmt.Errorf("session is alive")

// releaseSession drops the locks and open records of the session and
// purges the orphans it made or held open that no other session holds.
func (e *Engine) releaseSession(ctx context.Context, id meta.SessionID) error {
	locked, err := e.sessionInodes(ctx, kindSessionLock, id)
	if err != nil {
		return err
	}
	for _, ino := range locked {
		if err := e.update(ctx, func(t *txn) error { return t.dropSessionLocks(id, ino) }); err != nil {
			return err
		}
	}
	if err := e.releaseOpens(ctx, id); err != nil {
		return err
	}
	orphans, err := e.sessionInodes(ctx, kindSessionOrphan, id)
	if err != nil {
		return err
	}
	for _, ino := range orphans {
		if err := e.Purge(ctx, ino); err != nil {
			return err
		}
		e.forgetIndex(ctx, kindSessionOrphan, id, ino) // in case the orphan was relinked
	}
	return nil
}

// sessionInodes lists the inodes of one of a session's indexes.
func (e *Engine) sessionInodes(ctx context.Context, kind byte, id meta.SessionID) ([]meta.Ino, error) {
	var inos []meta.Ino
	err := e.store.View(ctx, func(tx kv.Tx) error {
		inos = inos[:0]
		return tx.Scan(inoKey(kind, meta.Ino(id)), nil, 0, func(k, _ []byte) bool {
			inos = append(inos, meta.Ino(be.Uint64(k[9:])))
			return true
		})
	})
	return inos, err
}

func (e *Engine) forgetIndex(ctx context.Context, kind byte, id meta.SessionID, ino meta.Ino) {
	_ = e.store.Txn(ctx, func(tx kv.Tx) error {
		tx.Delete(sessionIndexKey(kind, id, ino))
		return nil
	})
}

// orphanValue is the value of an 'O' key: the session that made the
// orphan (0: none) and when.
func orphanValue(id meta.SessionID, now int64) []byte {
	return be.AppendUint64(be.AppendUint64(nil, uint64(id)), uint64(now))
}

func decodeOrphan(v []byte) (meta.SessionID, int64) {
	if len(v) < 16 {
		return 0, decodeInt(v)
	}
	return meta.SessionID(be.Uint64(v)), int64(be.Uint64(v[8:]))
}

// markOrphan records ino as an orphan of the current session.
func (t *txn) markOrphan(ino meta.Ino) {
	t.tx.Set(orphanKey(ino), orphanValue(t.session, t.now))
	if t.session != 0 {
		t.tx.Set(sessionIndexKey(kindSessionOrphan, t.session, ino), nil)
	}
}

// unmarkOrphan deletes ino's orphan mark and its session index entry.
func (t *txn) unmarkOrphan(ino meta.Ino) error {
	raw, err := t.tx.Get(orphanKey(ino))
	if err != nil || raw == nil {
		return err
	}
	if id, _ := decodeOrphan(raw); id != 0 {
		t.tx.Delete(sessionIndexKey(kindSessionOrphan, id, ino))
	}
	t.tx.Delete(orphanKey(ino))
	return nil
}
