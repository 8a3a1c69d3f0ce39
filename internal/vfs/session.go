package vfs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"shoal/internal/meta"
)

// SessionConfig describes this client's session with the engine.
type SessionConfig struct {
	Info meta.SessionInfo
	// Heartbeat is how often the session is marked alive (0: 5 s).
	Heartbeat time.Duration
	// Timeout is how long a silent session lives before another client
	// reclaims its locks and orphans (0: 60 s). It is stored with the
	// session: every client judges it by this, not by its own. It must be
	// at least three heartbeats long. The mount fences its locks earlier,
	// after Timeout − max(Heartbeat, Timeout/4) without a renewal
	// (fence.go).
	Timeout time.Duration
	// Resume, if set, is the session of a previous server process of
	// this mount, to carry on with (meta.SessionResumer) instead of
	// beginning a new one; if it was reclaimed meanwhile a new one begins
	// and Adopt treats the adopted handles' locks as lost.
	Resume meta.SessionID
	// Report, when set, is asked before each heartbeat for the mount's
	// activity (operations, latency, slow operations); the FS adds its
	// open files and locks and the engine, if a meta.SessionReporter,
	// stores it with the heartbeat.
	Report func(now time.Time) meta.SessionReport
}

// BeginSession registers this mount with the engine and keeps it alive in
// the background until Close, which ends it. Engines without sessions
// (meta.Sessions) make it a no-op. Every client also reclaims sessions that
// stopped beating for their own timeout: that is how a dead machine's
// locks and unlinked-but-open files are released without a manual step.
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
	if cfg.Timeout < 3*cfg.Heartbeat {
		return fmt.Errorf("vfs: session timeout %v is shorter than three heartbeats (%v each)", cfg.Timeout, cfg.Heartbeat)
	}
	cfg.Info.Timeout, cfg.Info.Interval = cfg.Timeout, cfg.Heartbeat
	started := time.Now()
	id, err := fs.beginOrResume(ctx, s, cfg)
	if err != nil {
		return err
	}
	fs.setSession(id)
	fs.fence.start(leaseFor(cfg.Timeout, cfg.Heartbeat), started)
	loopCtx, cancel := context.WithCancel(context.Background())
	fs.endSession = func() {
		cancel()
		fs.fence.stop()
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
		fs.publishReport(cfg)
		fs.renewSession(ctx, s, cfg)
		c, cancel := context.WithTimeout(ctx, cfg.Timeout)
		if n, err := s.ReclaimSessions(c, cfg.Timeout); err == nil && n > 0 {
			fs.log.Info("reclaimed the locks and files of dead clients", "sessions", n)
		}
		cancel()
	}
}

// maxReportedLocks bounds the locked inodes a report lists.
const maxReportedLocks = 32

// publishReport hands the engine this mount's report for the next
// heartbeat. It runs at heartbeat cadence only.
func (fs *FS) publishReport(cfg SessionConfig) {
	r, ok := fs.engine.(meta.SessionReporter)
	if !ok || cfg.Report == nil {
		return
	}
	rep := cfg.Report(time.Now())
	fs.mu.Lock()
	rep.OpenFiles = len(fs.files)
	fs.mu.Unlock()
	locked := fs.lockedInodes()
	rep.LockedInodes = locked[:min(len(locked), maxReportedLocks)]
	r.SetSessionReport(rep)
}

// renewSession sends one heartbeat and renews the fence's lease from the
// moment it was sent; if the session was reclaimed meanwhile, it fails the
// descriptors holding locks for good and begins a new session. A call
// that outlives the lease could renew nothing, so it is bounded by it.
func (fs *FS) renewSession(ctx context.Context, s meta.Sessions, cfg SessionConfig) {
	started := time.Now()
	c, cancel := context.WithTimeout(ctx, fs.fence.lease)
	defer cancel()
	err := s.Heartbeat(c)
	if err == nil {
		fs.fence.renew(started)
		return
	}
	if errors.Is(err, meta.ErrSessionLost) {
		fs.sessionLost()
		started = time.Now()
		var id meta.SessionID
		if id, err = s.BeginSession(c, cfg.Info); err == nil {
			fs.setSession(id)
			fs.fence.renew(started)
			return
		}
	}
	if ctx.Err() == nil {
		fs.log.Warn("session heartbeat failed; will retry", "err", err)
	}
}

// sessionLost moves the fence to a new epoch and says loudly which files
// lost their locks.
func (fs *FS) sessionLost() {
	files := fs.lockedInodes()
	fs.fence.lose()
	if len(files) == 0 {
		fs.log.Error("this mount's session was reclaimed by another client (it was silent too long); it held no locks; starting a new session")
		return
	}
	fs.log.Error("LOCKS LOST: this mount's session was reclaimed by another client (it was silent too long) and its locks were released; "+
		"writes, fsyncs and lock calls through the descriptors that held locks on these inodes fail with EIO until they are closed, "+
		"and the files' unflushed writes are dropped: close the files, then open and lock them again", "inodes", files)
}

// beginOrResume resumes cfg.Resume if set and still alive, or begins a
// new session.
func (fs *FS) beginOrResume(ctx context.Context, s meta.Sessions, cfg SessionConfig) (meta.SessionID, error) {
	if cfg.Resume != 0 {
		r, ok := s.(meta.SessionResumer)
		if !ok {
			return 0, fmt.Errorf("vfs: the engine cannot resume session %d", cfg.Resume)
		}
		err := r.ResumeSession(ctx, cfg.Resume, cfg.Info)
		if err == nil {
			return cfg.Resume, nil
		}
		if !errors.Is(err, meta.ErrSessionLost) {
			return 0, err
		}
		fs.resumeLost = true
		fs.log.Error("LOCKS LOST: the previous server's session was reclaimed before this one took over (it was down longer than the session timeout); starting a new session", "session", cfg.Resume)
	}
	return s.BeginSession(ctx, cfg.Info)
}

// setSession records the session this mount works for (and journals it).
func (fs *FS) setSession(id meta.SessionID) {
	fs.mu.Lock()
	fs.session = id
	j := fs.journal
	fs.mu.Unlock()
	if j != nil {
		fs.noteJournal(j.Session(uint64(id)))
	}
}
