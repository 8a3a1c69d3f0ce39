// Package secrets checks, with the real binary on PostgreSQL and S3, that
// no password or key a volume is given shows up anywhere a local user or
// a later reader could see it: command output and errors, the mount's
// log, /proc/PID/cmdline (what ps shows), status, dumps and the stored
// settings. /proc/PID/environ is not checked: credentials given in the
// environment are there by design, readable only by the process's owner
// and root (docs/admin.md, "Secrets").
package secrets
