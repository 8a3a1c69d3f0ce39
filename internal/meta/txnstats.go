package meta

import "time"

// TxnStats are an engine's transaction counters since it was opened, for
// metrics: how many operations ran, how many of them had to run again
// (a conflict with another client, or a store briefly unreachable), and
// the time they took, retries included.
type TxnStats struct {
	Updates    int64         // read-write transactions run (one per changing operation)
	Views      int64         // read-only transactions run
	Retries    int64         // extra attempts of read-write transactions (after a conflict or an outage alike)
	Conflicts  int64         // read-write transactions that gave up still conflicting (cleared conflicts are only Retries)
	Failed     int64         // read-write transactions that returned any error
	UpdateTime time.Duration // total time in read-write transactions
	ViewTime   time.Duration // total time in read-only transactions
	// RetryTime is the total time of the read-write transactions that
	// needed more than one attempt (their whole time, first attempt too).
	RetryTime time.Duration
	// Cached counts the reads answered from the engine's client-side
	// cache instead of its server (meta.Cached; a Redis mount's lookups
	// and getattrs).
	Cached int64
}

// TxnCounter is implemented by engines that count their transactions
// (kvmeta.Engine).
type TxnCounter interface {
	TxnStats() TxnStats
}
