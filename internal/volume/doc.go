// Package volume is the only place that wires Shoal together: a META-URL
// becomes a metadata engine, the volume's settings name an object store,
// and the data layer and vfs are built over them. The CLI, the benchmark
// lab, the admin tools and the tests all open volumes here, so there is one
// wiring to keep right.
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
package volume
