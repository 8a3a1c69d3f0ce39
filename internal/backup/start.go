package backup

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"shoal/internal/meta"
	"shoal/internal/object"
)

// Start runs Run in a goroutine and returns stop, which ends it and waits
// until no backup is being written (call it before closing the engine).
// interval <= 0: nothing runs and stop does nothing.
func Start(eng meta.Engine, store object.Store, interval time.Duration, keep int, logger *slog.Logger) (stop func()) {
	if interval <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = Run(ctx, eng, store, interval, keep, logger)
	}()
	return func() { cancel(); <-done }
}

// IntervalFor returns the default backup interval for a META-URL: on
// (DefaultInterval) for the embedded SQLite engine, off (0) for server
// engines, which have their own backup tools and may have many mounts.
func IntervalFor(metaURL string) time.Duration {
	if strings.HasPrefix(metaURL, "sqlite:") {
		return DefaultInterval
	}
	return 0
}
