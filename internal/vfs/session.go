package vfs

import (
	"context"
	"errors"
	"time"

	"shoal/internal/meta"
)

// SessionConfig describes this client's session with the engine.
type SessionConfig struct {
	Info meta.SessionInfo
	// Heartbeat is how often the session is marked alive (0: 5 s).
	Heartbeat time.Duration
	// Timeout is how long a silent session lives before another client
	// reclaims its locks and orphans (0: 60 s). It must be several
	// heartbeats long.
	Timeout time.Duration
}

// BeginSession registers this mount with the engine and keeps it alive in
// the background until Close, which ends it. Engines without sessions
// (meta.Sessions) make it a no-op. Every client also reclaims sessions that
// stopped beating for Timeout: that is how a dead machine's locks and
// unlinked-but-open files are released without a manual step.
func (fs *FS) BeginSession(ctx context.Context, cfg SessionConfig) error {
	s, ok := fs.engine.(meta.Sessions)
	if !ok {
		return nil
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 5 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if _, err := s.BeginSession(ctx, cfg.Info); err != nil {
		return err
	}
	loopCtx, cancel := context.WithCancel(context.Background())
	fs.endSession = func() {
		cancel()
		if err := s.EndSession(context.Background()); err != nil {
			fs.log.Warn("ending session failed; another client will reclaim it", "err", err)
		}
	}
	fs.wg.Add(1)
	go func() { defer fs.wg.Done(); fs.heartbeat(loopCtx, s, cfg) }()
	return nil
}

// heartbeat keeps the session alive and reclaims dead ones.
func (fs *FS) heartbeat(ctx context.Context, s meta.Sessions, cfg SessionConfig) {
	t := time.NewTicker(cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := s.Heartbeat(ctx)
		if errors.Is(err, meta.ErrSessionLost) {
			fs.log.Error("this mount's session was reclaimed by another client (it was silent too long); its locks were released; starting a new session")
			_, err = s.BeginSession(ctx, cfg.Info)
		}
		if err != nil && ctx.Err() == nil {
			fs.log.Warn("session heartbeat failed; will retry", "err", err)
		}
		if n, err := s.ReclaimSessions(ctx, cfg.Timeout); err == nil && n > 0 {
			fs.log.Info("reclaimed the locks and files of dead clients", "sessions", n)
		}
	}
}
