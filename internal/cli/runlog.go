package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"shoal/internal/fsck"
	"shoal/internal/gc"
	"shoal/internal/meta"
)

// recordRun stores the outcome of an admin job in the engine (meta.RunLog)
// for `shoal console`. A failure to record is only logged: the job's own
// outcome stands.
func recordRun(eng meta.Engine, job string, started time.Time, ok bool, summary string) {
	rl, isLog := eng.(meta.RunLog)
	if !isLog {
		return
	}
	host, _ := os.Hostname()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := meta.RunRecord{Job: job, Host: host, Started: started.UTC(), Duration: time.Since(started), OK: ok, Summary: summary}
	if err := rl.RecordRun(ctx, r); err != nil {
		fmt.Fprintf(os.Stderr, "shoal: could not record the %s run for the console: %v\n", job, err)
	}
}

// recordFsck records a fsck run.
func recordFsck(eng meta.Engine, started time.Time, rep *fsck.Report, repair bool, err error) {
	switch {
	case err != nil || rep == nil:
		recordRun(eng, "fsck", started, false, fmt.Sprint("could not finish: ", err))
	default:
		s := fmt.Sprintf("%d inodes, %d slices, %d blocks checked; %d metadata problems and %d damaged files left",
			rep.Meta.Inodes, rep.Slices, rep.Blocks, rep.MetaUnrepaired(), rep.DataUnrepaired())
		if repair {
			s += fmt.Sprintf("; %d repairs", len(rep.Repairs))
		}
		recordRun(eng, "fsck", started, !rep.Damage(), s)
	}
}

// recordGC records a gc run.
func recordGC(eng meta.Engine, started time.Time, rep *gc.Report, err error) {
	switch {
	case err != nil || rep == nil:
		recordRun(eng, "gc", started, false, fmt.Sprint("failed: ", err))
	case rep.DryRun:
		recordRun(eng, "gc", started, !rep.Damaged(), fmt.Sprintf("dry run: %d leaked objects (%s) found, %d missing",
			rep.Leaked.Objects, humanBytes(rep.Leaked.Bytes), rep.MissingN))
	default:
		recordRun(eng, "gc", started, !rep.Damaged(), fmt.Sprintf("deleted %d leaked objects (%s); %d missing",
			rep.Deleted.Objects, humanBytes(rep.Deleted.Bytes), rep.MissingN))
	}
}
