package multihost

import (
	"testing"

	"shoal/internal/testutil"
	"shoal/tests/isolate"
)

// backend is one cell of the engine × store matrix: it formats a fresh
// volume for one test on servers that are already running.
type backend struct {
	name string
	// shared reports whether the engine is a network server (mounts on
	// different machines could share it); sqlite+file is not.
	shared bool
	// newVolume formats a fresh volume, isolated from every other test,
	// and registers its removal with t.Cleanup.
	newVolume func(t *testing.T) *testutil.Volume
}

// backends lists the matrix. The server-backed cells skip (or fail under
// SHOAL_REQUIRE_SERVICES=1) when their variables are unset.
func backends() []backend {
	return []backend{
		{name: "postgres+s3", shared: true, newVolume: func(t *testing.T) *testutil.Volume {
			return isolate.FormatS3(t, isolate.PGSchemaURL(t, testutil.PGURL(t)), testutil.S3URL(t))
		}},
		{name: "redis+s3", shared: true, newVolume: func(t *testing.T) *testutil.Volume {
			return isolate.FormatS3(t, isolate.RedisNamespaceURL(t, testutil.RedisURL(t)), testutil.S3URL(t))
		}},
		{name: "sqlite+file", newVolume: func(t *testing.T) *testutil.Volume {
			return testutil.NewVolume(t)
		}},
	}
}

// eachBackend runs fn as one subtest per matrix cell.
func eachBackend(t *testing.T, fn func(t *testing.T, b backend)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { fn(t, b) })
	}
}
