package metatest

import (
	"slices"
	"testing"
	"time"

	"shoal/internal/meta"
)

// testReport checks the optional meta.SessionReporter and meta.RunLog:
// a report is stored by the next heartbeat (not before), and each job
// keeps its last run record.
func testReport(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	if _, ok := v.e.(meta.SessionReporter); ok {
		testSessionReport(t, v)
	}
	if _, ok := v.e.(meta.RunLog); ok {
		testRunLog(t, v)
	}
}

func testSessionReport(t *testing.T, v *env) {
	s := v.e.(meta.Sessions)
	id, err := s.BeginSession(v.ctx, meta.SessionInfo{Host: "h", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	rep := meta.SessionReport{Ops: 42, OpsPerSec: 2.5, AvgLatency: time.Millisecond, OpenFiles: 3,
		LockedInodes: []uint64{7}, Slow: []meta.SlowOp{{Op: "write", Duration: time.Second}}}
	v.e.(meta.SessionReporter).SetSessionReport(rep)
	if got := sessionReport(t, v, s, id); got != nil {
		t.Fatalf("the report was stored before a heartbeat: %+v", got)
	}
	if err := s.Heartbeat(v.ctx); err != nil {
		t.Fatal(err)
	}
	got := sessionReport(t, v, s, id)
	if got == nil || got.Ops != 42 || got.OpenFiles != 3 || !slices.Equal(got.LockedInodes, rep.LockedInodes) ||
		len(got.Slow) != 1 || got.Slow[0].Duration != time.Second {
		t.Fatalf("after a heartbeat the session's report is %+v, want %+v", got, rep)
	}
}

// sessionReport returns session id's stored report.
func sessionReport(t *testing.T, v *env, s meta.Sessions, id meta.SessionID) *meta.SessionReport {
	t.Helper()
	list, err := s.ListSessions(v.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, si := range list {
		if si.ID == id {
			return si.Report
		}
	}
	t.Fatalf("session %d is not listed", id)
	return nil
}

func testRunLog(t *testing.T, v *env) {
	rl := v.e.(meta.RunLog)
	if runs, err := rl.Runs(v.ctx); err != nil || len(runs) != 0 {
		t.Fatalf("a fresh volume has runs %v, %v", runs, err)
	}
	for _, r := range []meta.RunRecord{
		{Job: "gc", OK: false, Summary: "first"},
		{Job: "fsck", OK: true, Summary: "clean"},
		{Job: "gc", OK: true, Summary: "second"},
	} {
		if err := rl.RecordRun(v.ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := rl.Runs(v.ctx)
	if err != nil {
		t.Fatal(err)
	}
	byJob := map[string]meta.RunRecord{}
	for _, r := range runs {
		byJob[r.Job] = r
	}
	if len(runs) != 2 || byJob["gc"].Summary != "second" || !byJob["gc"].OK || byJob["fsck"].Summary != "clean" {
		t.Fatalf("runs = %+v, want the last gc and the fsck", runs)
	}
}
