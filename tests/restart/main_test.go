package restart

import (
	"os"
	"testing"

	"shoal/internal/testutil"
)

func TestMain(m *testing.M) {
	testutil.RegisterHelper("holder", helperHolder)
	os.Exit(testutil.Main(m))
}
