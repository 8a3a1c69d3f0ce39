package rediskv

import (
	"crypto/tls"
	"path/filepath"
	"strings"
	"testing"

	"shoal/internal/tlsconf/tlstest"
)

func TestParseURLTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	cert, key := ca.Issue(t, dir, "client", "client")
	c, err := parseURL("rediss://:pw@127.0.0.1:6380/0?ca=" + ca.File + "&cert=" + cert + "&key=" + key)
	if err != nil {
		t.Fatal(err)
	}
	tc := c.opts.TLSConfig
	if tc == nil || tc.ServerName != "127.0.0.1" || tc.RootCAs == nil || len(tc.Certificates) != 1 ||
		tc.InsecureSkipVerify || tc.MinVersion != tls.VersionTLS12 {
		t.Fatalf("TLS config %+v", tc)
	}
	if strings.Contains(c.display, "ca=") {
		t.Errorf("display %q shows the query", c.display)
	}
	// Without ca= the system roots apply (RootCAs nil), still verified.
	c, err = parseURL("rediss://redis.example.com/0")
	if err != nil {
		t.Fatal(err)
	}
	if tc := c.opts.TLSConfig; tc == nil || tc.ServerName != "redis.example.com" || tc.RootCAs != nil || tc.InsecureSkipVerify {
		t.Errorf("TLS config %+v", tc)
	}
}

func TestParseURLTLSErrors(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	cert, _ := ca.Issue(t, dir, "client", "client")
	cases := map[string]string{
		"redis://h/0?ca=" + ca.File:                                "need TLS: use rediss://",
		"rediss://h/0?ca=" + filepath.Join(dir, "missing.crt"):     "missing.crt: no such file",
		"rediss://h/0?ca=" + cert + "&cert=" + cert:                "needs both cert= and key=",
		"rediss://h/0?insecure_skip_verify=true":                   `unknown META-URL parameter "insecure_skip_verify"`,
		"rediss+cluster://h1:1,h2:2?ca=" + filepath.Join(dir, "x"): "CA file",
	}
	for url, want := range cases {
		_, err := parseURL(url)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseURL(%q) = %v, want error mentioning %q", url, err, want)
		}
	}
}
