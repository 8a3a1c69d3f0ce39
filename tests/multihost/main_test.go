package multihost

import (
	"os"
	"testing"

	"shoal/internal/testutil"
)

func TestMain(m *testing.M) {
	testutil.RegisterHelper("locker", helperLocker)
	code := testutil.Main(m)
	stopDedicatedServers()
	os.Exit(code)
}
