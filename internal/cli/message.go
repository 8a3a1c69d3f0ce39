package cli

import (
	"errors"
	"strings"

	"shoal/internal/meta"
	"shoal/internal/meta/kv/kvopen"
	"shoal/internal/secret"
)

// userMessage is what the user sees of err: secret.Message (secrets
// masked, internal package names gone), shared with the web console.
func userMessage(err error) string { return secret.Message(err) }

// exitCodeOf is the process exit code for err (docs/cli.md, "Exit codes"):
// the code a command attached, else 4 for a volume that is not there
// (whichever command found out), 2 for a META-URL of no known scheme,
// else 1.
func exitCodeOf(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, meta.ErrNotFormatted):
		return ExitNotFound
	case errors.Is(err, kvopen.ErrBadURL):
		return ExitUsage
	case strings.HasPrefix(err.Error(), "unknown command "):
		return ExitUsage // cobra's, for the root: it has no type to test
	}
	return ExitError
}
