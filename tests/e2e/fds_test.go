package e2e

import (
	"fmt"
	"os"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// TestNoFDLeak opens and closes many files on the mount and checks that the
// mount process's descriptor count returns to where it was.
func TestNoFDLeak(t *testing.T) {
	m := mountFresh(t)
	writeFile(t, m.Path("warm"), []byte("warm"), 0o644)
	count := func() int {
		fds, err := testutil.OpenFDs(m.WaitServerPID(t))
		ok(t, err, "list mount fds")
		return len(fds)
	}
	base := count()
	for i := 0; i < 300; i++ {
		p := m.Path(fmt.Sprintf("f%d", i))
		writeFile(t, p, []byte("x"), 0o644)
		f, err := os.Open(p)
		ok(t, err, "open")
		ok(t, f.Close(), "close")
		ok(t, os.Remove(p), "unlink")
	}
	// RELEASE reaches the mount asynchronously: allow it a moment.
	deadline := time.Now().Add(5 * time.Second)
	n := count()
	for n > base+4 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		n = count()
	}
	if n > base+4 {
		fds, _ := testutil.OpenFDs(m.WaitServerPID(t))
		t.Errorf("mount process holds %d fds after 300 open/close cycles, %d before: %v", n, base, fds)
	}
}
