package s3store

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shoal/internal/object"
	"shoal/internal/tlsconf/tlstest"
)

func TestParseURLCA(t *testing.T) {
	t.Setenv(EnvCABundle, "/etc/env-ca.pem")
	cases := map[string]string{
		"https://h:9000/b?ca=/etc/url-ca.pem": "/etc/url-ca.pem", // the URL wins
		"https://h:9000/b":                    "/etc/env-ca.pem", // else the environment
		"http://h:9000/b":                     "",                // plain http has no use for it
		"s3://bkt":                            "/etc/env-ca.pem",
	}
	for u, want := range cases {
		c, err := ParseURL(u)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", u, err)
			continue
		}
		if c.CAFile != want {
			t.Errorf("ParseURL(%q).CAFile = %q, want %q", u, c.CAFile, want)
		}
		if strings.Contains(c.String(), "ca") && strings.Contains(c.String(), ".pem") {
			t.Errorf("String() %q shows the CA file", c.String())
		}
	}
	if _, err := ParseURL("http://h:9000/b?ca=/x.pem"); err == nil || !strings.Contains(err.Error(), "needs an https endpoint") {
		t.Errorf("ca= on http: %v", err)
	}
	cfg := Config{Endpoint: "h:1", Bucket: "b", CAFile: filepath.Join(t.TempDir(), "missing.pem")}
	if _, err := New(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "https") {
		t.Errorf("New with a CA and no https: %v", err)
	}
	cfg.Secure = true
	if _, err := New(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "missing.pem") {
		t.Errorf("New with a missing CA file: %v", err)
	}
}

// TestTLSVerification: the CA bundle is what the client trusts, and a
// certificate it does not trust is explained and not retried.
func TestTLSVerification(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	other := tlstest.NewCA(t, dir, "other")
	certFile, keyFile := ca.Issue(t, dir, "server", "127.0.0.1")
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK) // every bucket exists and is empty enough
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	endpoint := strings.TrimPrefix(srv.URL, "https://")
	open := func(caFile string) *Store {
		s, err := New(context.Background(), Config{Endpoint: endpoint, Secure: true, Bucket: "bkt", Region: "us-east-1",
			CAFile: caFile, AccessKey: "k", SecretKey: "s", Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ctx := context.Background()
	if _, err := open(ca.File).client.BucketExists(ctx, "bkt"); err != nil {
		t.Fatalf("right CA: %v", err)
	}
	wrong := open(other.File)
	err = wrong.Check(ctx)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "not signed by a trusted CA: give the CA that signed it with ?ca=FILE on the bucket URL or AWS_CA_BUNDLE") {
		t.Errorf("Check with the wrong CA = %v", err)
	}
	_, err = wrong.Head(ctx, "k")
	if !object.IsPermanent(err) || !strings.Contains(err.Error(), "not signed by a trusted CA") {
		t.Errorf("Head with the wrong CA = %v, want a permanent error that explains", err)
	}
}
