// Package trash tests the trash through the real binary on a mount, on
// SQLite, PostgreSQL and Redis (with a file bucket): files removed by rm
// or replaced by mv go to /.trash and still count in df, `shoal trash
// restore` brings them back byte for byte (under another name when theirs
// is taken), `shoal trash empty` frees them, and with the trash off
// nothing goes there. PostgreSQL and Redis come from SHOAL_TEST_PG and
// SHOAL_TEST_REDIS (skipped without them unless SHOAL_REQUIRE_SERVICES=1).
package trash

import (
	"os"
	"syscall"
	"testing"

	"shoal/internal/testutil"
)

func TestMain(m *testing.M) {
	syscall.Umask(0)
	os.Exit(testutil.Main(m))
}
