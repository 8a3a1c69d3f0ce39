package cli

import (
	"fmt"
	"io"
	"sort"
	"time"

	"shoal/internal/metrics"
)

// renderStats prints the view of cur against prev over dt: per-second
// rates and the mean latency of what happened in between. totals says
// the figures are since the mount started (prev is zero).
func renderStats(w io.Writer, mp string, prev, cur metrics.Snapshot, dt time.Duration, totals bool) {
	sec := dt.Seconds()
	if sec <= 0 {
		sec = 1
	}
	rate := func(a, b int64) float64 { return float64(b-a) / sec }
	what := fmt.Sprintf("per second over the last %v", dt.Round(time.Millisecond))
	if totals {
		what = "totals since the mount started, per second on average"
	}
	fmt.Fprintf(w, "shoal stats %s   up %v   (%s)\n\n", mp, time.Duration(cur.Uptime*float64(time.Second)).Round(time.Second), what)
	ops := diffOps(prev.Ops, cur.Ops)
	var n int64
	for _, o := range ops {
		n += o.Count
	}
	fmt.Fprintf(w, "FUSE     %8.0f ops/s   read %s/s   write %s/s\n", float64(n)/sec,
		humanRate(rate(prev.ReadBytes, cur.ReadBytes)), humanRate(rate(prev.WrittenBytes, cur.WrittenBytes)))
	renderOps(w, ops, sec, 8)
	e, pe := cur.Engine, prev.Engine
	fmt.Fprintf(w, "\nengine   %8.0f updates/s (mean %s)   %8.0f views/s (mean %s)   retries %.0f/s   conflicts %d   cached reads %.0f/s\n",
		rate(pe.Updates, e.Updates), mean(e.UpdateSeconds-pe.UpdateSeconds, e.Updates-pe.Updates),
		rate(pe.Views, e.Views), mean(e.ViewSeconds-pe.ViewSeconds, e.Views-pe.Views),
		rate(pe.Retries, e.Retries), e.Conflicts, rate(pe.Cached, e.Cached))
	objs := diffOps(prev.Objects, cur.Objects)
	fmt.Fprintf(w, "objects  put %s/s   fetched %s/s\n", humanRate(rate(prev.PutBytes, cur.PutBytes)), humanRate(rate(prev.FetchedBytes, cur.FetchedBytes)))
	renderOps(w, objs, sec, 5)
	hits, misses := cur.CacheHits-prev.CacheHits, cur.CacheMisses-prev.CacheMisses
	ratio := "-"
	if hits+misses > 0 {
		ratio = fmt.Sprintf("%.1f%%", 100*float64(hits)/float64(hits+misses))
	}
	fmt.Fprintf(w, "\ncache    hit ratio %s (%.0f hits/s, %.0f misses/s)   write buffer %s of %s\n", ratio, float64(hits)/sec, float64(misses)/sec,
		humanBytes(cur.BufferBytes), humanBytes(cur.BufferLimit))
	beat := "no session"
	if cur.HeartbeatAge >= 0 {
		beat = fmt.Sprintf("%.1fs ago", cur.HeartbeatAge)
	}
	fmt.Fprintf(w, "files    %d open (%d handles), %d locked   compaction backlog %d   cleaner backlog %d   heartbeat %s\n",
		cur.OpenFiles, cur.OpenHandles, cur.LockedFiles, cur.Compaction, cur.Cleaner, beat)
}

// namedOp is one operation's change between two snapshots.
type namedOp struct {
	name string
	metrics.OpTotals
}

// diffOps returns what happened per op between prev and cur, busiest
// first.
func diffOps(prev, cur map[string]metrics.OpTotals) []namedOp {
	var out []namedOp
	for name, c := range cur {
		d := c.Sub(prev[name])
		if d.Count > 0 {
			out = append(out, namedOp{name, d})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].name < out[j].name
	})
	return out
}

// renderOps prints up to most ops: rate, mean latency, errors, and the
// retries among them (with their backoff) when there were any.
func renderOps(w io.Writer, ops []namedOp, sec float64, most int) {
	for i, o := range ops {
		if i == most {
			fmt.Fprintf(w, "  ... %d more\n", len(ops)-most)
			return
		}
		fmt.Fprintf(w, "  %-16s %8.0f/s   mean %-9s errors %d", o.name, float64(o.Count)/sec, o.Mean().Round(time.Microsecond), o.Errors)
		if o.Retries > 0 {
			fmt.Fprintf(w, "   retries %d (backoff %.1fs)", o.Retries, o.Backoff)
		}
		fmt.Fprintln(w)
	}
}

// mean formats the mean of sum seconds over n events.
func mean(sum float64, n int64) string {
	if n <= 0 {
		return "-"
	}
	return metrics.OpTotals{Count: n, Seconds: sum}.Mean().Round(time.Microsecond).String()
}

// humanRate formats bytes per second.
func humanRate(b float64) string { return humanBytes(int64(b)) }
