package testutil

import (
	"os"
	"testing"
)

// Environment variables read by the harness.
const (
	// EnvRequireFUSE set to "1" turns a FUSE skip into a failure.
	EnvRequireFUSE = "SHOAL_REQUIRE_FUSE"
	// EnvRequireServices set to "1" turns a missing-service skip into a failure.
	EnvRequireServices = "SHOAL_REQUIRE_SERVICES"
	// EnvPG is a PostgreSQL URL for tests, e.g. postgres://u:p@127.0.0.1:5432/db.
	EnvPG = "SHOAL_TEST_PG"
	// EnvRedis is a Redis URL for tests, e.g. redis://127.0.0.1:6379/1.
	EnvRedis = "SHOAL_TEST_REDIS"
	// EnvS3 is an S3 bucket URL for tests, e.g.
	// http://127.0.0.1:9000/bucket; the credentials come from
	// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (never from the URL).
	EnvS3 = "SHOAL_TEST_S3"
	// EnvBinary, when set, is a prebuilt shoal binary used instead of
	// building ./cmd/shoal.
	EnvBinary = "SHOAL_BINARY"
	// EnvBuildFlags holds extra `go build` flags for the binary, space
	// separated, e.g. "-race".
	EnvBuildFlags = "SHOAL_TEST_BUILDFLAGS"
)

// skipOrFail skips t with msg, or fails it when the variable strict is "1".
func skipOrFail(t testing.TB, strict, msg string) {
	t.Helper()
	if os.Getenv(strict) == "1" {
		t.Fatalf("%s (%s=1 makes this a failure)", msg, strict)
	}
	t.Skip(msg)
}

// FUSEAvailable reports whether this process can mount FUSE file systems:
// /dev/fuse exists and the process runs as root. It returns a reason when
// it cannot.
func FUSEAvailable() (bool, string) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return false, "no /dev/fuse: " + err.Error()
	}
	if os.Geteuid() != 0 {
		return false, "mounted tests need root (they mount with allow_other and switch users)"
	}
	return true, ""
}

// RequireFUSE skips t when FUSE mounts are impossible here, or fails it when
// SHOAL_REQUIRE_FUSE=1.
func RequireFUSE(t testing.TB) {
	t.Helper()
	if ok, why := FUSEAvailable(); !ok {
		skipOrFail(t, EnvRequireFUSE, "skipping mounted test: "+why)
	}
}

// serviceURL returns the value of env, skipping or failing t when unset.
func serviceURL(t testing.TB, env, what string) string {
	t.Helper()
	u := os.Getenv(env)
	if u == "" {
		skipOrFail(t, EnvRequireServices, "skipping: "+env+" is not set (a "+what+" URL for tests; scripts/test.sh starts one)")
	}
	return u
}

// PGURL returns the PostgreSQL URL from SHOAL_TEST_PG.
func PGURL(t testing.TB) string { t.Helper(); return serviceURL(t, EnvPG, "PostgreSQL") }

// RedisURL returns the Redis URL from SHOAL_TEST_REDIS.
func RedisURL(t testing.TB) string { t.Helper(); return serviceURL(t, EnvRedis, "Redis") }

// S3URL returns the S3 URL (endpoint, credentials, bucket) from SHOAL_TEST_S3.
func S3URL(t testing.TB) string { t.Helper(); return serviceURL(t, EnvS3, "S3") }
