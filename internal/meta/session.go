package meta

import (
	"context"
	"math"
	"time"
)

// SessionID identifies one client (one mount, or one admin tool run) of a
// volume. 0 means "no session".
type SessionID uint64

// SessionInfo describes a live client, as `shoal status` lists it.
type SessionInfo struct {
	ID         SessionID `json:"id"`
	Host       string    `json:"host"`
	Mountpoint string    `json:"mountpoint"`
	Version    string    `json:"version"`
	PID        int       `json:"pid"`
	Started    time.Time `json:"started"`
	// Heartbeat is the time of the last renewal, on the engine's clock.
	Heartbeat time.Time `json:"heartbeat"`
	// Timeout is how long the session lives without a heartbeat: the
	// client's own --session-timeout, by which every other client judges
	// it. 0 in records written before sessions stored it (see
	// LegacySessionTimeout).
	Timeout time.Duration `json:"timeout,omitempty"`
	// Interval is how often the client means to renew (informational).
	Interval time.Duration `json:"interval,omitempty"`
	// Report is what the client last published of its activity (see
	// SessionReporter); nil for clients that publish none.
	Report *SessionReport `json:"report,omitempty"`
}

// LegacySessionTimeout is the least timeout given to a session whose
// record has none (written before records kept their own): such a session
// is judged by the larger of this and the reclaiming client's timeout,
// which was never shorter than the old default the writer ran with.
const LegacySessionTimeout = 60 * time.Second

// Sessions is how clients register with the engine so that what a dead
// client held is reclaimed by the living, with no manual step.
//
// After BeginSession, the engine attributes the orphans it creates (inodes
// unlinked while open, see Engine.Unlink) and the locks it takes to the
// session. EndSession and ReclaimSessions release both.
type Sessions interface {
	// BeginSession registers this engine's client with info (its Timeout
	// and Interval included; ID, Started and Heartbeat are the engine's)
	// and returns its id.
	BeginSession(ctx context.Context, info SessionInfo) (SessionID, error)
	// Heartbeat marks the session alive now, on the engine's clock.
	// ErrSessionLost if the session was reclaimed meanwhile (the client
	// was presumed dead): the caller should begin a new session. A nil
	// return proves the session was not being reclaimed when the engine
	// applied it, so the client still held every lock it held when the
	// call started.
	Heartbeat(ctx context.Context) error
	// EndSession releases the session's locks, purges its orphans and
	// removes it. Idempotent.
	EndSession(ctx context.Context) error
	// ListSessions returns the registered sessions, oldest first.
	ListSessions(ctx context.Context) ([]SessionInfo, error)
	// ReclaimSessions ends every other session that is dead, as
	// EndSession would, and returns how many. A session is dead when the
	// engine's clock is past its last heartbeat (also on the engine's
	// clock) by more than the session's own Timeout; never by the
	// caller's clock or timeout. fallback is the caller's timeout, used
	// only for records without one: max(fallback, LegacySessionTimeout).
	// Safe to run from every client at once.
	ReclaimSessions(ctx context.Context, fallback time.Duration) (int, error)
}

// SessionResumer is implemented by engines whose sessions a successor
// process of the same mount can carry on (a restarted or upgraded server).
type SessionResumer interface {
	// ResumeSession makes id this client's session, as if it had begun
	// it, and marks it alive with info's PID and Version. ErrSessionLost
	// if it is gone or being reclaimed.
	ResumeSession(ctx context.Context, id SessionID, info SessionInfo) error
}

// Lock types, as fcntl(2) F_RDLCK, F_WRLCK and F_UNLCK.
const (
	LockRead   uint32 = 0
	LockWrite  uint32 = 1
	LockUnlock uint32 = 2
)

// LockEnd is the End of a lock that reaches to the end of the file.
const LockEnd = math.MaxUint64

// Lock is a byte-range lock over [Start, End] (End inclusive, LockEnd for
// "to end of file"), with the process id reported by F_GETLK.
type Lock struct {
	Type  uint32
	Start uint64
	End   uint64
	Pid   uint32
}

// Locker holds flock(2) and fcntl(2) locks across all clients. An owner is
// the kernel's lock owner (the open file for flock and OFD locks, the
// process's file table for POSIX locks), qualified by the engine with its
// session, so owners of different machines never collide. Locks never
// block in the engine: a conflicting request returns EAGAIN and the caller
// retries for the blocking variants.
type Locker interface {
	// Flock takes a shared (LockRead) or exclusive (LockWrite) whole-file
	// lock for owner, converting one it holds, or drops it (LockUnlock).
	// EAGAIN if another owner holds a conflicting lock.
	Flock(ctx context.Context, ino Ino, owner uint64, typ uint32) error
	// Getlk returns the first lock of another owner that conflicts with
	// lk, or lk with Type LockUnlock when none does.
	Getlk(ctx context.Context, ino Ino, owner uint64, lk Lock) (Lock, error)
	// Setlk sets lk for owner with fcntl semantics: it replaces the
	// owner's locks over the range (splitting and merging ranges), and
	// LockUnlock removes them. EAGAIN if another owner holds a
	// conflicting lock over the range (nothing changes then).
	Setlk(ctx context.Context, ino Ino, owner uint64, lk Lock) error
}
