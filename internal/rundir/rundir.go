// Package rundir owns the directories where a mount keeps its runtime
// files. The private one (Dir) holds the server's pid file, the
// supervisor's control socket and the journal (internal/journal) — files
// a successor server replays with trusted credentials, so nobody else may
// be able to plant or change them, or read the journal's data. The public
// one (PublicDir) holds what every local user may read: the metrics
// address (`shoal stats MOUNTPOINT` run by any user finds a root mount's
// endpoint there; the address is no secret, the endpoint listens anyway).
//
// The directory is /run/shoal for root (a tmpfs: the files die with the
// machine, as the journal's page-cache durability assumes). For another
// user it is $XDG_RUNTIME_DIR/shoal, or, without that, $TMPDIR/shoal-UID.
// Ensure creates it mode 0700 and refuses one that is a symlink, is not
// owned by the caller, or is writable by group or others: a directory
// another local user created first is not used (the mount fails instead).
//
// The public directory is /run/shoal-metrics for root, mode 0755, checked
// like the private one (owned by root, writable by nobody else). Another
// user's mounts record their address in their private Dir, which no other
// user could find: another user reaches those with `shoal stats --metrics
// ADDR`. (Making /run/shoal itself searchable, 0711, was rejected: every
// file in it would then have to guard itself, and the journal's names are
// predictable.)
//
// A mountpoint's files are named by escaping its absolute path the way
// systemd-escape --path does (the slashes between components become "-";
// "-", "\" and every byte outside [A-Za-z0-9:_.] become \xNN; a leading "."
// too; the root is "-"), which is reversible, so two mountpoints never
// share a name (/a_b and /a/b are "a_b" and "a-b").
package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Dir returns the runtime directory for the calling user (see the package
// doc); it does not create it.
func Dir() string {
	if os.Geteuid() == 0 {
		return "/run/shoal"
	}
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "shoal")
	}
	return filepath.Join(os.TempDir(), "shoal-"+strconv.Itoa(os.Geteuid()))
}

// Ensure creates Dir (mode 0700) if needed and checks that only the
// caller can write in it, returning it.
func Ensure() (string, error) {
	dir := Dir()
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("runtime directory: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("runtime directory: %w", err)
	}
	return dir, Check(dir)
}

// Check says what is unsafe about dir as a runtime directory, if anything.
func Check(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("runtime directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("runtime directory %s is not a directory (a symlink?): remove it", dir)
	case !ok || int(st.Uid) != os.Geteuid():
		return fmt.Errorf("runtime directory %s is owned by another user: remove it (someone may have created it to plant files a mount would trust)", dir)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("runtime directory %s is writable by group or others (mode %v): remove it or chmod 700 it", dir, fi.Mode().Perm())
	}
	return nil
}

// PublicDir returns the calling user's public runtime directory (see the
// package doc); it does not create it.
func PublicDir() string {
	if os.Geteuid() == 0 {
		return rootPublic
	}
	return Dir()
}

// rootPublic is root's public runtime directory.
const rootPublic = "/run/shoal-metrics"

// EnsurePublic creates PublicDir (mode 0755, or 0700 where it is the
// private Dir) if needed and checks that only the caller can write in it,
// returning it.
func EnsurePublic() (string, error) {
	dir := PublicDir()
	if dir == Dir() {
		return Ensure()
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("public runtime directory: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("public runtime directory: %w", err)
	}
	return dir, Check(dir)
}

// PublicPath is the public runtime file of mountpoint mp (absolute) with
// suffix (".metrics") of a mount by the caller.
func PublicPath(mp, suffix string) string {
	return filepath.Join(PublicDir(), Name(mp)+suffix)
}

// PublicPathOf is the public runtime file of a mount at mp by user uid,
// as the caller can find it: root's public directory for uid 0, the
// caller's own for the caller's uid; ok is false for another user's
// mount, whose runtime directory the caller cannot know.
func PublicPathOf(uid int, mp, suffix string) (path string, ok bool) {
	switch uid {
	case os.Geteuid():
		return PublicPath(mp, suffix), true
	case 0:
		return filepath.Join(rootPublic, Name(mp)+suffix), true
	}
	return "", false
}

// Path is the runtime file of mountpoint mp (absolute) with suffix
// (".pid", ".sock", ".journal", whose lock is ".journal.lock").
func Path(mp, suffix string) string {
	return filepath.Join(Dir(), Name(mp)+suffix)
}

// Name escapes the absolute path mp as systemd-escape --path does.
func Name(mp string) string {
	p := strings.Trim(filepath.Clean(mp), "/")
	if p == "" {
		return "-"
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '/':
			b.WriteByte('-')
		case c == '.' && i == 0,
			!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ':' || c == '_' || c == '.'):
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
