package meta

import (
	"context"
	"time"
)

// SessionReport is what a mount says of its own activity, published with
// its session heartbeat (so at heartbeat cadence, in the write the
// heartbeat makes anyway) for `shoal console` and `shoal status --json`.
// It is a snapshot: figures over the last heartbeat interval, not totals
// kept by the engine.
type SessionReport struct {
	// At is when the mount took the snapshot, on its own clock.
	At time.Time `json:"at"`
	// Ops counts the file-system operations the mount served since it
	// started; OpsPerSec is their rate over the last interval and
	// AvgLatency their mean duration over it.
	Ops        uint64        `json:"ops"`
	OpsPerSec  float64       `json:"ops_per_sec"`
	AvgLatency time.Duration `json:"avg_latency"`
	// ReadBytes and WrittenBytes count the bytes applications read and
	// wrote through the mount since it started; the rates are over the
	// last interval, in bytes per second.
	ReadBytes     uint64  `json:"read_bytes"`
	WrittenBytes  uint64  `json:"written_bytes"`
	ReadPerSec    float64 `json:"read_per_sec"`
	WrittenPerSec float64 `json:"written_per_sec"`
	// OpenFiles counts the inodes the mount holds open; LockedInodes
	// lists (up to a few dozen of) those it holds locks on.
	OpenFiles    int      `json:"open_files"`
	LockedInodes []uint64 `json:"locked_inodes,omitempty"`
	// Slow lists the slowest operations of the last few minutes,
	// slowest first.
	Slow []SlowOp `json:"slow,omitempty"`
}

// SlowOp is one slow operation a mount served.
type SlowOp struct {
	Op       string        `json:"op"` // the FUSE operation: "write", "fsync", ...
	Duration time.Duration `json:"duration"`
	At       time.Time     `json:"at"`
	Failed   bool          `json:"failed,omitempty"` // answered with an error
}

// SessionReporter is an optional capability of an engine with Sessions:
// the report given to SetSessionReport is stored with the next heartbeat
// (in the same write) and shows in SessionInfo.Report. Safe for
// concurrent use; it never writes by itself.
type SessionReporter interface {
	SetSessionReport(r SessionReport)
}

// RunRecord is the outcome of the last run of an admin job on a volume:
// "fsck", "gc" or "backup".
type RunRecord struct {
	Job      string        `json:"job"`
	Host     string        `json:"host"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration"`
	OK       bool          `json:"ok"`
	// Summary is one line: what the job found or did, or its error.
	Summary string `json:"summary"`
}

// RunLog keeps the last RunRecord of each job in the engine, so that any
// client (the console) can show when fsck, gc and backups last ran.
type RunLog interface {
	// RecordRun replaces the record of r.Job. One small write.
	RecordRun(ctx context.Context, r RunRecord) error
	// Runs returns the last record of every job that ran, by job name.
	Runs(ctx context.Context) ([]RunRecord, error)
}

// EngineClock is an optional capability of an engine with Sessions: the
// engine's own clock, on which session heartbeats are stamped, so that a
// reader (the console) judges heartbeat ages as reclaimers do, whatever
// its own clock says.
type EngineClock interface {
	EngineNow(ctx context.Context) (time.Time, error)
}
