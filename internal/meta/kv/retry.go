package kv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"shoal/internal/meta"
)

// Class says what a backend's retry loop does with a failed attempt.
type Class int

const (
	// Fatal: return the error to the caller as it is.
	Fatal Class = iota
	// Conflict: the transaction lost a race and was rolled back; running
	// it again is safe.
	Conflict
	// Unavailable: the server could not be reached and the transaction did
	// not commit, so running it again (later) is safe.
	Unavailable
)

// Backoff bounds. Conflicts clear in microseconds, so they start small;
// an unreachable server takes seconds to come back.
const (
	conflictBase = 200 * time.Microsecond
	conflictCap  = 100 * time.Millisecond
	offlineBase  = 50 * time.Millisecond
	offlineCap   = 2 * time.Second
)

// Retry is the one retry policy of the backends' transaction helpers. It
// runs attempt until it returns a nil error (committed) or a Fatal one,
// backing off exponentially with jitter between Conflict and Unavailable
// failures, for at most timeout in total; the last retry runs at the
// deadline. Errors start with prefix (the backend and store name). Once
// the bound is spent the error wraps meta.ErrUnavailable: a conflict that
// never clears (another process holding a lock, keys that keep changing)
// makes a store as unusable as a dead server, and then also wraps
// ErrConflict. When ctx ends, its error is reported first.
func Retry(ctx context.Context, prefix string, timeout time.Duration, attempt func() (Class, error)) error {
	deadline := time.Now().Add(timeout)
	for n := 0; ; n++ {
		class, err := attempt()
		if ctxErr := ctx.Err(); err != nil && ctxErr != nil {
			return fmt.Errorf("%s: %w (%v)", prefix, ctxErr, err)
		}
		if err == nil || class == Fatal {
			return err
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			if class == Conflict {
				return fmt.Errorf("%s: %w: still conflicting after %d attempts: %w (%w)", prefix, meta.ErrUnavailable, n+1, ErrConflict, err)
			}
			return fmt.Errorf("%s: %w after %d attempts: %w", prefix, meta.ErrUnavailable, n+1, err)
		}
		if err := sleep(ctx, min(backoff(class, n), remaining)); err != nil {
			return fmt.Errorf("%s: %w", prefix, err)
		}
	}
}

// backoff returns the delay before retry number n+1: exponential from the
// class's base up to its cap, with ±50% jitter so that colliding clients
// spread out.
func backoff(class Class, n int) time.Duration {
	base, ceiling := conflictBase, conflictCap
	if class == Unavailable {
		base, ceiling = offlineBase, offlineCap
	}
	d := base << min(n, 20)
	if d > ceiling || d <= 0 {
		d = ceiling
	}
	return d/2 + rand.N(d)
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
