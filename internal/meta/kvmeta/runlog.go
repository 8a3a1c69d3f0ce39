package kvmeta

import (
	"context"
	"encoding/json"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// Run records (meta.RunLog) live among the counters, one key per job,
// 'N' "run." job → JSON of meta.RunRecord, replaced by each run: a handful
// of small keys, written only by admin jobs, never by the file-system
// operations. They are dumped and restored with the other counters.
const runPrefix = "run."

var _ meta.RunLog = (*Engine)(nil)

// RecordRun replaces the record of r.Job.
func (e *Engine) RecordRun(ctx context.Context, r meta.RunRecord) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	err = e.store.Txn(ctx, func(tx kv.Tx) error {
		tx.Set(counterKey(runPrefix+r.Job), data)
		return nil
	})
	return wrap(err, "record %s run", r.Job)
}

// Runs scans the run records.
func (e *Engine) Runs(ctx context.Context) ([]meta.RunRecord, error) {
	var out []meta.RunRecord
	err := e.store.View(ctx, func(tx kv.Tx) error {
		out = out[:0]
		var derr error
		err := tx.Scan(counterKey(runPrefix), nil, 0, func(_, v []byte) bool {
			var r meta.RunRecord
			derr = json.Unmarshal(v, &r)
			out = append(out, r)
			return derr == nil
		})
		return firstErr(err, derr)
	})
	return out, wrap(err, "list runs")
}
