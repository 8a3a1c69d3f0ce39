package sqlkv

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"shoal/internal/tlsconf/tlstest"
)

// TestPostgresTLSParams: sslmode and sslrootcert reach pgx, so
// verify-full verifies the host against the given CA with no plain-text
// fallback.
func TestPostgresTLSParams(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	u, err := parseURL("postgres://u:secret@127.0.0.1:5432/db?sslmode=verify-full&sslrootcert=" + url.QueryEscape(ca.File) + "&retry_timeout=5s")
	if err != nil {
		t.Fatal(err)
	}
	s := &Store{}
	if err := s.takeRetryParam(u); err != nil {
		t.Fatal(err)
	}
	d, err := newPostgres(u)
	if err != nil {
		t.Fatal(err)
	}
	tc := d.cfg.TLSConfig
	if tc == nil || tc.ServerName != "127.0.0.1" || tc.RootCAs == nil || tc.InsecureSkipVerify {
		t.Fatalf("TLS config %+v", tc)
	}
	if len(d.cfg.Fallbacks) != 0 {
		t.Errorf("verify-full has %d fallbacks, want none (no plain-text retry)", len(d.cfg.Fallbacks))
	}
}

func TestPostgresTLSParamErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing-ca.pem")
	u, err := parseURL("postgres://u:secret@127.0.0.1:5432/db?sslmode=verify-full&sslrootcert=" + missing)
	if err != nil {
		t.Fatal(err)
	}
	_, err = newPostgres(u)
	if err == nil || !strings.Contains(err.Error(), missing) || strings.Contains(err.Error(), "secret") {
		t.Errorf("newPostgres with a missing sslrootcert = %v, want an error naming the file and not the password", err)
	}
}
