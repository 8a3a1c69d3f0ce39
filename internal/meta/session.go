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
	Heartbeat  time.Time `json:"heartbeat"`
}

// Sessions is how clients register with the engine so that what a dead
// client held is reclaimed by the living, with no manual step.
//
// After BeginSession, the engine attributes the orphans it creates (inodes
// unlinked while open, see Engine.Unlink) and the locks it takes to the
// session. EndSession and ReclaimSessions release both.
type Sessions interface {
	// BeginSession registers this engine's client and returns its id.
	BeginSession(ctx context.Context, info SessionInfo) (SessionID, error)
	// Heartbeat marks the session alive now. ErrSessionLost if the session
	// was reclaimed meanwhile (the client was presumed dead): the caller
	// should begin a new session.
	Heartbeat(ctx context.Context) error
	// EndSession releases the session's locks, purges its orphans and
	// removes it. Idempotent.
	EndSession(ctx context.Context) error
	// ListSessions returns the registered sessions, oldest first.
	ListSessions(ctx context.Context) ([]SessionInfo, error)
	// ReclaimSessions ends every other session whose last heartbeat is
	// older than expiry, as EndSession would, and returns how many.
	// Safe to run from every client at once.
	ReclaimSessions(ctx context.Context, expiry time.Duration) (int, error)
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
