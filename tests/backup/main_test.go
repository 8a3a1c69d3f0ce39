package backup

import (
	"os"
	"testing"

	"shoal/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }
