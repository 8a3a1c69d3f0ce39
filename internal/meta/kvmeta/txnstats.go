package kvmeta

import (
	"errors"
	"sync/atomic"
	"time"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

var _ meta.TxnCounter = (*Engine)(nil)

// txnCounters are the live meta.TxnStats: a few atomic adds per
// transaction, against the microseconds to milliseconds one takes.
type txnCounters struct {
	updates, views, retries, conflicts, failed atomic.Int64
	updateNs, viewNs, retryNs                  atomic.Int64
}

// update counts one read-write transaction of attempts tries that took d.
func (c *txnCounters) update(d time.Duration, attempts int, err error) {
	c.updates.Add(1)
	c.updateNs.Add(int64(d))
	if attempts > 1 {
		c.retries.Add(int64(attempts - 1))
		c.retryNs.Add(int64(d))
	}
	if err != nil {
		c.failed.Add(1)
		if errors.Is(err, kv.ErrConflict) {
			c.conflicts.Add(1)
		}
	}
}

// view counts one read-only transaction that took d.
func (c *txnCounters) view(d time.Duration) {
	c.views.Add(1)
	c.viewNs.Add(int64(d))
}

// TxnStats implements meta.TxnCounter.
func (e *Engine) TxnStats() meta.TxnStats {
	c := &e.txns
	return meta.TxnStats{
		Updates: c.updates.Load(), Views: c.views.Load(), Retries: c.retries.Load(),
		Conflicts: c.conflicts.Load(), Failed: c.failed.Load(),
		UpdateTime: time.Duration(c.updateNs.Load()), ViewTime: time.Duration(c.viewNs.Load()),
		RetryTime: time.Duration(c.retryNs.Load()),
		Cached:    kv.CachedReads(e.store),
	}
}
