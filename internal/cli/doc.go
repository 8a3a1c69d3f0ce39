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
// The binary is also mount(8)'s helper (mounthelper.go): run as
// mount.shoal or mount.fuse.shoal (the links 'shoal install' makes in
// /sbin), Main turns "SOURCE DIR -o OPTIONS" into 'shoal mount
// --background' flags and returns mount(8)'s exit codes (1 usage, 32
// failure). Processes it starts carry SHOAL_MOUNT_HELPER so that a copy of
// the binary named mount.shoal runs as shoal in them.
package cli
