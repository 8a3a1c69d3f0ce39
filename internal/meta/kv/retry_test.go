package kv

import (
	"context"
	"errors"
	"testing"
	"time"

	"shoal/internal/meta"
)

func TestRetry(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	n := 0
	err := Retry(ctx, "x", time.Second, func() (Class, error) {
		if n++; n < 3 {
			return Conflict, boom
		}
		return Fatal, nil
	})
	if err != nil || n != 3 {
		t.Fatalf("conflicts then commit: %v after %d attempts", err, n)
	}
	n = 0
	err = Retry(ctx, "x", time.Second, func() (Class, error) { n++; return Fatal, boom })
	if !errors.Is(err, boom) || n != 1 {
		t.Fatalf("fatal: %v after %d attempts, want boom after 1", err, n)
	}
	err = Retry(ctx, "x", 20*time.Millisecond, func() (Class, error) { return Conflict, boom })
	if !errors.Is(err, meta.ErrUnavailable) || !errors.Is(err, ErrConflict) || !errors.Is(err, boom) {
		t.Fatalf("endless conflict: %v, want ErrUnavailable, ErrConflict and the cause", err)
	}
	err = Retry(ctx, "x", 20*time.Millisecond, func() (Class, error) { return Unavailable, boom })
	if !errors.Is(err, meta.ErrUnavailable) || errors.Is(err, ErrConflict) {
		t.Fatalf("endless outage: %v, want ErrUnavailable only", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err = Retry(cctx, "x", time.Minute, func() (Class, error) { return Unavailable, boom })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
}
