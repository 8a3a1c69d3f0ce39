// Package cli holds the shoal command line: one file per subcommand, each a
// cobra command built by a newXxxCmd function and listed in root.go. Main is
// a plain function so tests can call it. Only this package calls os.Exit
// (through cmd/shoal), and exit codes live in exitcode.go.
package cli
