// Package cli holds the shoal command line: one file per subcommand, each a
// cobra command built by a newXxxCmd function and listed in root.go. Main is
// a plain function so tests can call it. Only this package calls os.Exit
// (through cmd/shoal), and exit codes live in exitcode.go.
//
// Secrets (package secret): cmd/shoal masks the process's argv before
// Main runs; every command registers the secrets of its environment and
// --meta-password-file, prints META-URLs and bucket URLs through
// secret.Mask, and Main masks the final error; the mount's logger masks
// every logged string and error; mount --background hands a URL password
// to its child in the environment (SHOAL_META_PASSWORD), never in argv.
//
// A mount as root is two processes (supervise.go, server.go): the
// supervisor keeps the kernel connection and starts server processes —
// the same binary and arguments with SHOAL_SERVER_ROLE set — restarting
// one that dies and replacing one on `mount --upgrade` (a request on its
// control socket) or SIGHUP; servers talk to it over a socket pair
// (the connection's descriptor, "ready", "quiesce"). The password reaches
// servers in the environment too.
//
// The binary is also mount(8)'s helper (mounthelper.go): run as
// mount.shoal or mount.fuse.shoal (the links 'shoal install' makes in
// /sbin), Main turns "SOURCE DIR -o OPTIONS" into 'shoal mount
// --background' flags and returns mount(8)'s exit codes (1 usage, 32
// failure). Processes it starts carry SHOAL_MOUNT_HELPER so that a copy of
// the binary named mount.shoal runs as shoal in them.
package cli
