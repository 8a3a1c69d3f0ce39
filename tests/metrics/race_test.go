package metrics_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shoal/internal/metrics"
	"shoal/internal/testutil"
	"shoal/tests/isolate"
)

// TestEngineRetriesUnderRace mounts one Redis volume twice and has both
// mounts create files in one directory at once, scraping both while they
// run, until an update transaction had to retry (both change the
// directory's record, so optimistic transactions collide). Retries come
// with their time; nothing gives up (conflicts stay 0), nothing fails,
// and every create is an update transaction.
func TestEngineRetriesUnderRace(t *testing.T) {
	v := testutil.NewVolumeWith(t, testutil.VolumeConfig{MetaURL: isolate.RedisNamespaceURL(t, testutil.RedisURL(t))})
	a := v.Mount(t, "--metrics", "127.0.0.1:0")
	dirB := filepath.Join(v.Dir, "mnt-b")
	if err := os.Mkdir(dirB, 0o755); err != nil {
		t.Fatal(err)
	}
	b := v.MountAt(t, dirB, "--metrics", "127.0.0.1:0")
	urls := []string{endpoint(t, a), endpoint(t, b)}
	if err := os.Mkdir(a.Path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := []metrics.Snapshot{scrape(t, urls[0]), scrape(t, urls[1])}

	stop := make(chan struct{})
	var created atomic.Int64
	var wg sync.WaitGroup
	for i, m := range []*testutil.Mount{a, b} {
		for w := 0; w < 3; w++ {
			wg.Add(1)
			go func(prefix string) {
				defer wg.Done()
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					if err := os.WriteFile(fmt.Sprintf("%s%d", prefix, n), nil, 0o644); err != nil {
						t.Error(err)
						return
					}
					created.Add(1)
				}
			}(m.Path("d", fmt.Sprintf("m%dw%d-", i, w)))
		}
	}
	retried := func() (metrics.EngineTotals, bool) {
		var sum metrics.EngineTotals
		for _, u := range urls {
			e := scrape(t, u).Engine
			sum.Retries += e.Retries
			sum.RetrySeconds += e.RetrySeconds
			sum.Conflicts += e.Conflicts
		}
		return sum, sum.Retries > 0
	}
	var during metrics.EngineTotals
	deadline := time.Now().Add(60 * time.Second)
	for ok := false; !ok; {
		if during, ok = retried(); !ok && time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if during.Retries == 0 {
		t.Fatalf("no engine retry after %d creates by two mounts in one directory", created.Load())
	}
	if during.RetrySeconds <= 0 || during.Conflicts != 0 {
		t.Errorf("during the race: %d retries taking %v s, %d conflicts given up", during.Retries, during.RetrySeconds, during.Conflicts)
	}
	var updates, failed int64
	for i, u := range urls {
		s := settled(t, u)
		updates += s.Engine.Updates - before[i].Engine.Updates
		failed += s.Engine.Failed - before[i].Engine.Failed
	}
	if n := created.Load(); updates < n || failed != 0 {
		t.Errorf("%d creates: %d update transactions, %d failed", n, updates, failed)
	}
	t.Logf("%d creates by two mounts: %d retries (%.3f s), %d updates", created.Load(), during.Retries, during.RetrySeconds, updates)
}
