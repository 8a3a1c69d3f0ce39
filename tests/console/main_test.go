// Package console tests the web console of the real binary in headless
// Chromium: `shoal console` and `shoal mount --console` against SQLite and
// a shared engine (Redis), read as a browser renders them and compared
// with `shoal status --json`.
package console

import (
	"os"
	"testing"

	"shoal/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }
