// Package metrics_test mounts the real binary with --metrics, runs known
// workloads, and checks that the Prometheus counters and `shoal stats`
// moved by exactly (or within tight bounds of) what the workload did.
package metrics_test

import (
	"os"
	"testing"

	"shoal/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }
