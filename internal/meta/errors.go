package meta

import "errors"

// Errors engines return besides bare syscall.Errno values.
var (
	// ErrNotFormatted: the database holds no volume. Run `shoal format`.
	ErrNotFormatted = errors.New("volume not formatted")
	// ErrFormatted: Format found an existing volume and force was not set.
	ErrFormatted = errors.New("volume already formatted")
	// ErrNewerFormat: the volume was written by a newer Shoal.
	ErrNewerFormat = errors.New("volume format is newer than this binary")
	// ErrConflict: a transaction collided with another client's. Engine
	// txn helpers retry it; callers see it only from CompactChunk.
	ErrConflict = errors.New("transaction conflict")
	// ErrUnavailable: the engine could not be reached within its retry
	// bound. The vfs reports EIO and the next call tries again.
	ErrUnavailable = errors.New("metadata engine unavailable")
)

// ErrSessionLost: the client's session was reclaimed by another client
// (its heartbeats stopped for too long); its locks and orphans are gone.
var ErrSessionLost = errors.New("session lost: reclaimed by another client")
