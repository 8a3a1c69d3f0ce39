package e2e

import (
	"os"
	"syscall"
	"testing"

	"shoal/internal/testutil"
)

func TestMain(m *testing.M) {
	// Modes in the tests are exact: no umask.
	syscall.Umask(0)
	testutil.RegisterHelper("op", helperOp)
	testutil.RegisterHelper("writer", helperWriter)
	testutil.RegisterHelper("hold", helperHold)
	os.Exit(testutil.Main(m))
}
