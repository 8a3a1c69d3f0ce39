package vm

import (
	"net/url"
	"testing"

	"shoal/internal/testutil"
	"shoal/tests/isolate"
)

// netBackend formats a volume on network servers, reached through relays
// on the lab bridge (relay), so that mounts in the lab's namespaces can
// use it.
type netBackend struct {
	name      string
	newVolume func(t *testing.T) *testutil.Volume
}

// networkBackends are the engine × store cells of a multi-host setup.
// They skip (or fail under SHOAL_REQUIRE_SERVICES=1) without the servers.
func networkBackends() []netBackend {
	return []netBackend{
		{"postgres+s3", func(t *testing.T) *testutil.Volume {
			return isolate.FormatS3(t, isolate.PGSchemaURL(t, relayed(t, testutil.PGURL(t))), relayed(t, testutil.S3URL(t)))
		}},
		{"redis+s3", func(t *testing.T) *testutil.Volume {
			return isolate.FormatS3(t, isolate.RedisNamespaceURL(t, relayed(t, testutil.RedisURL(t))), relayed(t, testutil.S3URL(t)))
		}},
	}
}

// relayed returns raw with its host replaced by a relay to it on the
// lab bridge.
func relayed(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("bad service URL: %v", err)
	}
	u.Host = relay(t, u.Host)
	return u.String()
}
