// Package volume is the only place that wires Shoal together: a META-URL
// becomes a metadata engine, the volume's settings name an object store,
// and the data layer and vfs are built over them. The CLI, the benchmark
// lab, the admin tools and the tests all open volumes here, so there is one
// wiring to keep right.
//
// Load (and Open) only read a volume: a SQLite META-URL whose database
// file does not exist is reported as no volume (meta.ErrNotFormatted)
// before the engine could create an empty database there; Format and
// OpenEngine (load) create one.
//
// The block store is built in one function, BlockStore: the retrying
// store, compression over it when the volume's format asks for it, and
// block checksums on top (data → checksum → compress → store), so the
// layers above see plain, verified blocks. fsck reads blocks through the same
// function. A volume's compression is fixed at format time (version 3
// volumes); status measures its ratio from a listing (MeasureCompression).
//
// It also keeps a volume's identity in its bucket (internal/identity):
// Format claims the bucket (and refuses one another volume claims, or one
// holding blocks from before claims existed); Open refuses a bucket whose
// claims do not include the volume, and gives the vfs a MayDelete that
// holds the cleaner's deletes while the bucket is shared; Adopt turns a
// volume just restored from a dump into one of its own (a new uuid, slice
// ids far from its source's, the dump's orphans purged, its claim
// written, and with LoadReplace the source's claim released).
//
// Object stores (objects.go): OpenStore is the one way any command opens a
// volume's object store: the backend (objopen), an optional StoreHook (a
// mount's metrics: a wrapper over the backend, told of each retry too)
// and the one retry policy, object.WithRetryHook with StoreAttempts and
// StoreBackoff. Neither the S3 client nor the data layer retries a request
// on its own.
//
// Encryption at rest (crypt.go): an encrypted volume's settings hold its
// data key wrapped (internal/keyring). Open unwraps it with
// Options.Secret, refusing a wrong secret before any object is read, and
// stores blocks through object.WithEncryption instead of
// object.WithChecksum (BlockStore) and metadata backups through it too
// (Volume.Sealed). The store order on the write path (blocks.go,
// objects.go) is, on a plain volume, data → checksum → (compress) → retry
// → (hook) → backend, and on an encrypted one data → (compress) → encrypt
// → retry → (hook) → backend: the hook sees every attempt. Rotate rewraps
// the data key under a new secret.
//
// Test hook: SHOAL_TEST_CLOCK_SKEW=DURATION (ClockSkewEnv) shifts the wall
// clock of every engine opened here, as on a machine whose clock is off.
// It exists so tests can show that sessions do not depend on the clients'
// clocks (they are timed on the engine's). It is for tests only, not a
// user setting, and may change without notice.
package volume
