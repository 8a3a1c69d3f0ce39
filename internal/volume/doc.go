// Package volume is the only place that wires Shoal together: a META-URL
// becomes a metadata engine, the volume's settings name an object store,
// and the data layer and vfs are built over them. The CLI, the benchmark
// lab, the admin tools and the tests all open volumes here, so there is one
// wiring to keep right.
package volume
