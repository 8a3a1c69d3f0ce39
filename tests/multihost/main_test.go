package multihost

import (
	"os"
	"testing"

	"shoal/internal/testutil"
)

func TestMain(m *testing.M) {
	testutil.RegisterHelper("locker", helperLocker)
	testutil.RegisterHelper("workload", helperWorkload)
	testutil.RegisterHelper("agent", helperAgent)
	code := testutil.Main(m)
	stopDedicatedServers()
	os.Exit(code)
}
