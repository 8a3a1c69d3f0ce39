package crash

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
