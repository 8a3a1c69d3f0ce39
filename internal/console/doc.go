// Package console serves a volume's web console: one server-rendered
// page (html/template, embedded CSS, inline SVG bars; no script and no
// external asset) and its JSON twin, /api/status.
//
// It shows what the engine knows, read fresh for every request:
//   - the volume's settings (secrets masked) and its space and inodes,
//     used against the limits it was formatted with, and each directory
//     quota;
//   - every live mount (meta.Sessions): host, version, uptime, heartbeat
//     age (on the engine's clock, meta.EngineClock, as reclaimers judge
//     it; "dead" past the session's own timeout), and what it last
//     published with its heartbeat
//     (meta.SessionReport: ops/s, mean latency, open files, locked
//     inodes, its slowest recent operations, see package opstat);
//   - the last fsck, gc and backup runs (meta.RunLog);
//   - the benchmark reports (`shoal bench --html`) in a directory it is
//     given, listed and served under /reports/.
//
// The console adds no load to the mounts: it reads the records they
// write at heartbeat cadence anyway. A page costs a Statfs, a session
// scan, a quota and a run-record scan.
//
// # Writes
//
// Read-only unless a token is configured (Config.Token, which the CLI
// reads from a file, never argv). With one, POST /action/reclaim ends the
// sessions that outlived their own timeout (as the next heartbeat of any
// mount would) when the request carries the token as "Authorization:
// Bearer TOKEN" or a form field "token"; otherwise it is 403, and the
// page offers no form. Tokens are compared in constant time. Pages send a
// Content-Security-Policy that forbids scripts (benchmark reports, which
// carry their own inline script, are served under their own policy).
//
// Import rules: console imports meta and secret; never an engine, vfs,
// fusefs or cli. The CLI (`shoal console`, `shoal mount --console`) wires
// it to an engine.
package console
