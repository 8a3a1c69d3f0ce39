// Package meta owns Shoal's metadata model: the types every engine stores
// (inodes, attributes, directory entries, chunk slice lists, volume format),
// the Engine interface the vfs calls, the sentinel errors, and the POSIX rules
// that do not depend on an engine (posix.go).
//
// Invariants every engine keeps:
//   - Each Engine method is one file-system operation and is atomic: it
//     happens whole or not at all, also under concurrency from other
//     processes and machines using the same volume.
//   - Expected POSIX outcomes are returned as bare syscall.Errno values
//     (ENOENT, EEXIST, ENOTEMPTY, ...). Anything else is wrapped with the
//     operation and ids, and callers map it to EIO.
//   - Permission checks use the credentials carried by the context
//     (WithCred); a context without credentials acts as root.
//
// Import rules: meta imports only the standard library. Engines live in
// sub-packages and import meta, never the other way round.
package meta
