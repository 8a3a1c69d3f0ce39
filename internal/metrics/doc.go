// Package metrics owns a mount's Prometheus registry and instruments, and
// reads them back as plain numbers.
//
// What is measured, and where the hooks are:
//
//   - FUSE requests (Registry.Op, Read, Written): fusefs times every
//     request it answers when a mount has an observer (fusefs.Options.Ops),
//     through a wrapper over its RawFileSystem. A mount always has one,
//     opstat's Recorder (the figures it publishes for `shoal console`),
//     which passes each request on to the Registry with --metrics; without
//     it the Registry does not exist and the mount pays only the Recorder's
//     few atomic adds. Operations are numbered by fusefs; New takes
//     their names and pre-binds one histogram child and one error counter
//     per number, so an observation is an array index and two atomic adds.
//   - Object store requests (Registry.Objects): a wrapper the volume puts
//     directly over the backend, under the one retry policy
//     (volume.OpenStore's StoreHook), so each attempt is one request; the
//     policy tells Registry.ObjectRetry of each retry and its backoff.
//   - Everything the layers count themselves (data.Stats, vfs.Stats,
//     meta.TxnStats: cache hits, the write buffer, engine transactions and
//     retries, open files, locks, backlogs, the session's heartbeat): read
//     once per scrape by Registry.Watch, never pushed from the hot path.
//
// names.go lists every metric name; docs/admin.md explains them and
// docs/grafana/shoal.json charts them (a test checks that every name the
// dashboard queries exists here).
//
// Snapshot and Parse turn a registry, or a scrape of a mount's /metrics,
// into a Snapshot of totals: `shoal stats` takes one a second and shows
// the differences, and `stats --once --json` prints one. The web console
// does not use them: it reads what each mount publishes in its session
// record (meta.SessionReport, filled by opstat), with or without --metrics.
//
// Import rules: metrics imports object, data, meta and vfs for their
// types only, and the Prometheus client libraries; nothing below cli
// imports metrics.
package metrics
