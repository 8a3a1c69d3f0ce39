package cli

import (
	"os"
	"strconv"
	"time"
)

// Test hooks of the mount's server: environment variables the tests set
// to make a rare interleaving happen every time. For tests only; not user
// settings.
const (
	// journalSegmentEnv sets the journal's segment size in bytes
	// (journal.Options.SegmentSize): small, a mount rotates its journal
	// every few writes.
	journalSegmentEnv = "SHOAL_TEST_JOURNAL_SEGMENT"
	// closeDelayEnv makes a server whose mount was unmounted wait this
	// long (a Go duration) before it closes the volume and removes its
	// journal, as a slow flush would.
	closeDelayEnv = "SHOAL_TEST_CLOSE_DELAY"
)

// testSegmentSize is journalSegmentEnv's size (0: the default).
func testSegmentSize() int64 {
	n, _ := strconv.ParseInt(os.Getenv(journalSegmentEnv), 10, 64)
	return n
}

// testCloseDelay sleeps as closeDelayEnv says.
func testCloseDelay() {
	if d, err := time.ParseDuration(os.Getenv(closeDelayEnv)); err == nil {
		time.Sleep(d)
	}
}
