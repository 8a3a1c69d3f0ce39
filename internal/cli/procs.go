package cli

import (
	"os"
	"runtime"
)

// minProcs is the fewest Ps (runtime.GOMAXPROCS) a mount runs with, more
// than the cores of a small machine. Go's file reads and writes are
// blocking system calls, and a goroutine inside one keeps its P, the right
// to run Go code, until the runtime's monitor takes it back (after 20 µs
// at best, up to 10 ms when it has been idle). With one P per core, two
// FUSE requests waiting on the disk stalled every other request, so a
// guest's 32 queued random reads of a cold image reached the disk about
// two at a time. Measured on the 2-core test machine: 4 jobs × 8 random
// 4 KiB O_DIRECT reads went from 15,800–18,100 to 22,800–27,500 IOPS with
// 8 Ps, with 16 and 32 no better; small-file creates, stats and unlinks
// and a 1 GiB sequential write were unchanged.
const minProcs = 8

// raiseProcs applies minProcs unless the user set GOMAXPROCS.
func raiseProcs() {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	if runtime.GOMAXPROCS(0) < minProcs {
		runtime.GOMAXPROCS(minProcs)
	}
}
