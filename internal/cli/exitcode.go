package cli

import "errors"

// Exit codes of the shoal binary; documented in docs/cli.md.
const (
	ExitOK       = 0 // success
	ExitError    = 1 // the command failed; the message says why
	ExitUsage    = 2 // wrong arguments or flags
	ExitDamage   = 3 // fsck found damage it did not repair, gc found the volume damaged, or backup verify found bad blocks
	ExitNotFound = 4 // volume not formatted, or mountpoint missing
)

// exitError carries an exit code through cobra's error return.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// errReported is an error another process already printed (a supervised
// mount's server): run prints nothing more, only exits with its code.
var errReported = errors.New("reported")

// withCode marks err with an exit code.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}
