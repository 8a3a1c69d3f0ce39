package metrics_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"testing"
	"time"

	"shoal/internal/metrics"
	"shoal/internal/testutil"
)

// metricsURL is where the mount says (in its log) it serves metrics.
var metricsURL = regexp.MustCompile(`url=(http://[0-9.:]+/metrics)`)

// endpoint returns the metrics URL of m, waiting for its log line.
func endpoint(t *testing.T, m *testutil.Mount) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if g := metricsURL.FindStringSubmatch(m.LogText()); g != nil {
			return g[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mount logged no metrics address:\n%s", m.LogText())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scrape reads the mount's metrics now.
func scrape(t *testing.T, url string) metrics.Snapshot {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %v %s", url, err, resp.Status)
	}
	s, err := metrics.Parse(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// settled scrapes once the mount holds no open handles: the kernel
// sends a file's last release after close returns, so a scrape right
// after a workload may still see it open.
func settled(t *testing.T, url string) metrics.Snapshot {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := scrape(t, url)
		if s.OpenHandles == 0 {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mount still holds %d handles open", s.OpenHandles)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pattern returns n bytes that differ block to block.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/4096)
	}
	return b
}

// writeFiles creates k empty files in a new directory dir, and big with
// data; every close flushes.
func writeFiles(t *testing.T, m *testutil.Mount, k int, data []byte) {
	t.Helper()
	if err := os.Mkdir(m.Path("dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < k; i++ {
		if err := os.WriteFile(m.Path("dir", fmt.Sprintf("f%02d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(m.Path("big"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readBack reads big and checks it is data.
func readBack(t *testing.T, m *testutil.Mount, data []byte) {
	t.Helper()
	got, err := os.ReadFile(m.Path("big"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes that differ from the %d written", len(got), len(data))
	}
}

// delta is cur minus prev for one op.
func delta(prev, cur metrics.Snapshot, op string) metrics.OpTotals {
	return cur.Ops[op].Sub(prev.Ops[op])
}

// objDelta is cur minus prev for one object store op.
func objDelta(prev, cur metrics.Snapshot, op string) metrics.OpTotals {
	return cur.Objects[op].Sub(prev.Objects[op])
}
