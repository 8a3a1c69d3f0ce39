// Package volume is the only place that wires Shoal together: a META-URL
// becomes a metadata engine, the volume's settings name an object store,
// and the data layer and vfs are built over them. The CLI, the benchmark
// lab, the admin tools and the tests all open volumes here, so there is one
// wiring to keep right.
//
// Test hook: SHOAL_TEST_CLOCK_SKEW=DURATION (ClockSkewEnv) shifts the wall
// clock of every engine opened here, as on a machine whose clock is off.
// It exists so tests can show that sessions do not depend on the clients'
// clocks (they are timed on the engine's). It is for tests only, not a
// user setting, and may change without notice.
package volume
