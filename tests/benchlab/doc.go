// Package benchlab holds the end-to-end tests of `shoal bench`: every
// workload run briefly through the real binary against temporary
// directories and a Shoal mount with the JSON and HTML reports checked
// (the HTML rendered by headless Chromium), error reporting on a full file
// system and without permission, and the agreement test that compares
// shoal bench's figures with fio, bonnie++ and PostMark on the same
// parameters (docs/bench.md states its tolerance).
//
// The tests run the built binary (testutil.Binary) and read only its
// output: they import no Shoal package but the test harness and the
// report schema (shoal/internal/bench/result).
package benchlab
