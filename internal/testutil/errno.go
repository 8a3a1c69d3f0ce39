package testutil

import (
	"errors"
	"syscall"
)

// NotErrno is what Errno returns for an error that carries no errno: it
// never equals an outcome a test predicts.
const NotErrno = syscall.Errno(1 << 20)

// Errno is the errno err carries (0 for nil), for comparing an
// operation's outcome with a prediction or with another file system's.
func Errno(err error) syscall.Errno {
	var e syscall.Errno
	if err == nil {
		return 0
	}
	if errors.As(err, &e) {
		return e
	}
	return NotErrno
}
