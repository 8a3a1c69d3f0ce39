package fusefs

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"shoal/internal/meta"
)

// errnoMapper turns errors into FUSE statuses, logging each distinct
// unexpected error once.
type errnoMapper struct {
	log    *slog.Logger
	mu     sync.Mutex
	logged map[string]bool
}

// status maps err: nil → OK; a syscall.Errno anywhere in the chain → that
// errno, unless it comes from the network (ECONNREFUSED from a server
// that is down is no answer for a file operation); a canceled context →
// EINTR; anything else → EIO, logged once with its full chain.
func (m *errnoMapper) status(op string, err error) fuse.Status {
	if err == nil {
		return fuse.OK
	}
	var errno syscall.Errno
	if errors.As(err, &errno) && !unreachable(err) {
		return fuse.Status(errno)
	}
	if errors.Is(err, context.Canceled) {
		return fuse.EINTR
	}
	m.logOnce(op, err)
	return fuse.EIO
}

// unreachable reports whether err is a failure to reach the engine or the
// object store rather than an answer about the file.
// (Not net.Error: a bare syscall.Errno implements it too.)
func unreachable(err error) bool {
	var opErr *net.OpError
	return errors.Is(err, meta.ErrUnavailable) || errors.As(err, &opErr)
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
