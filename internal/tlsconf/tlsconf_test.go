package tlsconf_test

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"shoal/internal/tlsconf"
	"shoal/internal/tlsconf/tlstest"
)

// serve runs a TLS (or, with certFile "", plain) listener on 127.0.0.1 that
// completes handshakes and closes; it returns the address.
func serve(t *testing.T, certFile, keyFile string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{pair}})
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if tc, ok := c.(*tls.Conn); ok {
				_ = tc.Handshake()
			} else {
				_, _ = c.Write([]byte("-ERR not TLS\r\n\r\n\r\n"))
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

var hints = tlsconf.Hints{CA: "ca=FILE", Cert: "cert=FILE"}

func dial(addr string, files tlsconf.Files, serverName string) error {
	cfg, err := files.Config(serverName)
	if err != nil {
		return err
	}
	c, err := tls.Dial("tcp", addr, cfg)
	if err == nil {
		c.Close()
	}
	return err
}

func TestVerify(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	other := tlstest.NewCA(t, dir, "other-ca")
	cert, key := ca.Issue(t, dir, "server", "127.0.0.1", "localhost")
	addr := serve(t, cert, key)
	if err := dial(addr, tlsconf.Files{CA: ca.File}, "127.0.0.1"); err != nil {
		t.Fatalf("right CA, by IP: %v", err)
	}
	if err := dial(addr, tlsconf.Files{CA: ca.File}, "localhost"); err != nil {
		t.Fatalf("right CA, by name: %v", err)
	}
	cases := []struct {
		name, ca, host, want string
	}{
		{"wrong CA", other.File, "127.0.0.1", "is not signed by a trusted CA: give the CA that signed it with ca=FILE"},
		{"system roots", "", "127.0.0.1", "is not signed by a trusted CA"},
		{"wrong host", ca.File, "db.example.com", `is for localhost, 127.0.0.1, not "db.example.com"`},
	}
	for _, c := range cases {
		err := dial(addr, tlsconf.Files{CA: c.ca}, c.host)
		if err == nil {
			t.Errorf("%s: handshake succeeded", c.name)
			continue
		}
		if got := tlsconf.Explain(err, addr, hints); !strings.Contains(got, c.want) {
			t.Errorf("%s: Explain(%v) = %q, want it to contain %q", c.name, err, got, c.want)
		}
	}
}

func TestExplainPlainServer(t *testing.T) {
	addr := serve(t, "", "")
	err := dial(addr, tlsconf.Files{}, "127.0.0.1")
	if err == nil {
		t.Fatal("TLS handshake with a plain server succeeded")
	}
	if got := tlsconf.Explain(err, addr, hints); !strings.Contains(got, "does not answer in TLS") {
		t.Errorf("Explain(%v) = %q", err, got)
	}
	if got := tlsconf.Explain(os.ErrNotExist, addr, hints); got != "" {
		t.Errorf("Explain(non-TLS error) = %q, want empty", got)
	}
}

func TestFilesErrors(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	cert, key := ca.Issue(t, dir, "client", "client")
	notPEM := filepath.Join(dir, "junk")
	if err := os.WriteFile(notPEM, []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		files tlsconf.Files
		want  string
	}{
		"missing CA":    {tlsconf.Files{CA: filepath.Join(dir, "nope.crt")}, "nope.crt: no such file"},
		"CA not PEM":    {tlsconf.Files{CA: notPEM}, "holds no PEM certificate"},
		"cert, no key":  {tlsconf.Files{Cert: cert}, "needs both cert= and key="},
		"key, no cert":  {tlsconf.Files{Key: key}, "needs both cert= and key="},
		"key not a key": {tlsconf.Files{Cert: cert, Key: notPEM}, "client certificate"},
	}
	for name, c := range cases {
		_, err := c.files.Config("h")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Config = %v, want an error containing %q", name, err, c.want)
		}
	}
	cfg, err := tlsconf.Files{CA: ca.File, Cert: cert, Key: key}.Config("h")
	if err != nil || cfg.RootCAs == nil || len(cfg.Certificates) != 1 || cfg.ServerName != "h" || cfg.InsecureSkipVerify {
		t.Errorf("Config = %+v, %v", cfg, err)
	}
}

// TestExplainClientRefused: a server that rejects the client's certificate
// answers with an alert, explained with the client-certificate setting.
func TestExplainClientRefused(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	other := tlstest.NewCA(t, dir, "other")
	cert, key := ca.Issue(t, dir, "server", "127.0.0.1")
	strangerCert, strangerKey := other.Issue(t, dir, "stranger", "client")
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := tlsconf.LoadCA(ca.File)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	cfg, err := tlsconf.Files{CA: ca.File, Cert: strangerCert, Key: strangerKey}.Config("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
	if err == nil { // TLS 1.3: the server's verdict arrives with the first read
		_, err = c.Read(make([]byte, 1))
		c.Close()
	}
	if got := tlsconf.Explain(err, "srv", hints); !strings.Contains(got, "srv refused the TLS handshake") || !strings.Contains(got, "with cert=FILE") {
		t.Errorf("Explain(%v) = %q", err, got)
	}
}
