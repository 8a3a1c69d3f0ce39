package fusefs

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// errnoMapper turns errors into FUSE statuses, logging each distinct
// unexpected error once.
type errnoMapper struct {
	log    *slog.Logger
	mu     sync.Mutex
	logged map[string]bool
}

// status maps err: nil → OK; a syscall.Errno anywhere in the chain → that
// errno; a canceled context → EINTR; anything else → EIO, logged once
// with its full chain.
func (m *errnoMapper) status(op string, err error) fuse.Status {
	if err == nil {
		return fuse.OK
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return fuse.Status(errno)
	}
	if errors.Is(err, context.Canceled) {
		return fuse.EINTR
	}
	m.logOnce(op, err)
	return fuse.EIO
}

func (m *errnoMapper) logOnce(op string, err error) {
	msg := err.Error()
	m.mu.Lock()
	seen := m.logged[msg]
	if !seen {
		if len(m.logged) > 10000 {
			clear(m.logged)
		}
		m.logged[msg] = true
	}
	m.mu.Unlock()
	if !seen {
		m.log.Error("operation failed, returning EIO", "op", op, "err", err)
	}
}
