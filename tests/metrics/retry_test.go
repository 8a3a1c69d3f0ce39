package metrics_test

import (
	"os"
	"testing"

	"shoal/internal/testutil"
	"shoal/tests/isolate"
)

// TestObjectPutRetriedByOnePolicy puts a volume's bucket on MinIO behind
// a proxy that answers the first block puts with 503 SlowDown. The write
// succeeds once the fault clears, and each failed attempt reached the
// store once: the proxy saw exactly the put requests the mount's metrics
// counted (no retries of the S3 client's own under the volume's policy),
// the failures are the errors, and the policy's retries and backoff are
// counted too.
func TestObjectPutRetriedByOnePolicy(t *testing.T) {
	const failures = 3 // the policy tries 10 times; 3 failures wait 0.35 to 0.7 s
	s3 := testutil.S3URL(t)
	proxy := newS3Proxy(t, s3)
	v := testutil.NewVolumeWith(t, testutil.VolumeConfig{
		FormatArgs: []string{"--storage", "s3", "--bucket", proxy.URL(t, isolate.S3Prefix(t, s3))},
	})
	m := v.Mount(t, "--metrics", "127.0.0.1:0", "--backup-interval", "0")
	url := endpoint(t, m)
	s0 := scrape(t, url)
	proxy.FailPuts(failures)
	data := pattern(100 << 10) // one block
	if err := os.WriteFile(m.Path("big"), data, 0o644); err != nil {
		t.Fatalf("a write over a store failing %d times: %v", failures, err)
	}
	s1 := settled(t, url)
	puts, failed, _ := proxy.Counts()
	t.Logf("the store received %d block puts, %d failed; the mount counted %+v", puts, failed, objDelta(s0, s1, "put"))
	if puts != failures+1 || failed != failures {
		t.Errorf("the store received %d block puts (%d failed) for one block and %d injected failures, want %d: one policy retries",
			puts, failed, failures, failures+1)
	}
	got := objDelta(s0, s1, "put")
	if got.Count != int64(puts) || got.Errors != int64(failed) {
		t.Errorf("the mount counted %d puts, %d failed; the store received %d, %d failed", got.Count, got.Errors, puts, failed)
	}
	// Backoff from 100 ms doubling, each in the upper half of its
	// interval: 50+100+200 to 100+200+400 ms.
	if got.Retries != failures || got.Backoff < 0.35 || got.Backoff > 0.7 {
		t.Errorf("the mount counted %d retries of puts after %.3f s of backoff, want %d after 0.35 to 0.7 s", got.Retries, got.Backoff, failures)
	}
	if s1.BlocksPut-s0.BlocksPut != 1 || s1.PutFailures != s0.PutFailures {
		t.Errorf("%d blocks stored, %d uploads failed after the retries; want 1 and none", s1.BlocksPut-s0.BlocksPut, s1.PutFailures-s0.PutFailures)
	}
	m.Unmount(t)
	m = v.Mount(t, "--backup-interval", "0")
	readBack(t, m, data)
}
