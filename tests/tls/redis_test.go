package tls

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"shoal/internal/testutil"
	"shoal/internal/tlsconf"
)

// TestRedisTLS: rediss:// with ca= formats and mounts a volume, also with a
// client certificate (cert=, key=); the wrong CA, a client certificate the
// server does not trust, and plain redis:// are refused.
func TestRedisTLS(t *testing.T) {
	testutil.RedisURL(t) // the service skip rules
	s, p := startRedisTLS(t)
	clientCert, clientKey := p.ca.Issue(t, s.dir, "client", "shoal-client")
	strangerCert, strangerKey := p.other.Issue(t, s.dir, "stranger", "shoal-client")
	rURL := func(scheme, query string) string {
		return fmt.Sprintf("%s://127.0.0.1:%d/0?%s", scheme, s.port, query)
	}
	q := func(kv ...string) string {
		v := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v.Encode()
	}
	format := func(metaURL string) []string {
		return []string{"format", metaURL, "--name", "t", "--storage", "file", "--bucket", filepath.Join(s.dir, "bucket")}
	}

	v := testutil.NewVolumeWith(t, testutil.VolumeConfig{MetaURL: rURL("rediss", q("ca", p.ca.File, "ns", "v1"))})
	roundTrip(t, v)
	v = testutil.NewVolumeWith(t, testutil.VolumeConfig{MetaURL: rURL("rediss", q("ca", p.ca.File, "cert", clientCert, "key", clientKey, "ns", "v2"))})
	roundTrip(t, v)

	mustFail(t, format(rURL("rediss", q("ca", p.other.File, "ns", "v3"))),
		"is not signed by a trusted CA", "?ca=FILE in the META-URL")
	// The server checks a client certificate it is shown: proof cert= is sent.
	mustFail(t, format(rURL("rediss", q("ca", p.ca.File, "cert", strangerCert, "key", strangerKey, "ns", "v4"))),
		"refused the TLS handshake", "cert=FILE&key=FILE")
	// The server speaks only TLS, so the volumes above used it.
	mustFail(t, format(rURL("redis", q("ns", "v5"))), "cannot connect to Redis")
}

// startRedisTLS runs a Redis that serves only TLS on a free port, with a
// certificate for 127.0.0.1 and localhost; client certificates are
// optional, but one that is shown must come from the test CA.
func startRedisTLS(t *testing.T) (*server, pki) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("no redis-server (scripts/services.sh installs it)")
	}
	s := newServer(t, "redis")
	p := newPKI(t, s.dir)
	s.argv = []string{bin, "--port", "0", "--tls-port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--tls-cert-file", p.serverCert, "--tls-key-file", p.serverKey, "--tls-ca-cert-file", p.ca.File,
		"--tls-auth-clients", "optional", "--protected-mode", "no", "--save", "", "--appendonly", "no", "--dir", s.dir}
	cfg, err := tlsconf.Files{CA: p.ca.File}.Config("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	s.start(t, func() error { return pingRedis(s.addr(), cfg) })
	return s, p
}

func pingRedis(addr string, cfg *tls.Config) error {
	c := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: cfg, DialTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return c.Ping(ctx).Err()
}
