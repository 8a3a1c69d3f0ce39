package cli

import (
	"errors"
	"regexp"
	"strings"

	"shoal/internal/meta"
	"shoal/internal/meta/kv/kvopen"
	"shoal/internal/secret"
)

// internalPrefix matches the package names internal errors start with
// ("sqlkv: ", "kvmeta: load: " keeps "load: "), where a message or a
// wrapped one begins: they say where in the code an error arose, which
// means nothing to the person who reads it. Command names ("gc: ",
// "fsck: "), concepts ("backup: ") and prose ("a volume: ") stay.
var internalPrefix = regexp.MustCompile(`(^|: |\()(?:sqlkv|rediskv|memkv|kvmeta|kvopen|kv|filestore|s3store|memstore|objopen|keyring|identity|vfs|fusefs|volume|data): `)

// userMessage is what the user sees of err: secrets masked, internal
// package names gone.
func userMessage(err error) string {
	msg := secret.Mask(err.Error())
	for {
		next := internalPrefix.ReplaceAllString(msg, "${1}")
		if next == msg {
			return msg
		}
		msg = next
	}
}

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
