package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
)

// Files names the PEM files of a TLS client.
type Files struct {
	// CA holds the certificates that may sign the server's; "" means the
	// system roots.
	CA string
	// Cert and Key are the client's certificate and private key, for
	// servers that require one; both or neither.
	Cert, Key string
}

// Empty reports whether no file is named.
func (f Files) Empty() bool { return f == Files{} }

// Config returns a client configuration that verifies serverName (a host
// name or IP address) with f's files.
func (f Files) Config(serverName string) (*tls.Config, error) {
	cfg := &tls.Config{ServerName: serverName, MinVersion: tls.VersionTLS12}
	if err := f.Apply(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Apply sets cfg's roots and client certificate from f's files.
func (f Files) Apply(cfg *tls.Config) error {
	if f.CA != "" {
		pool, err := LoadCA(f.CA)
		if err != nil {
			return err
		}
		cfg.RootCAs = pool
	}
	if (f.Cert == "") != (f.Key == "") {
		return errors.New("tls: a client certificate needs both cert= and key=")
	}
	if f.Cert != "" {
		pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return fmt.Errorf("tls: client certificate %s with key %s: %w", f.Cert, f.Key, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return nil
}

// LoadCA reads a PEM file of one or more CA certificates.
func LoadCA(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tls: CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("tls: CA file %s holds no PEM certificate", path)
	}
	return pool, nil
}

// Hints names, for messages, the settings that give a backend its CA and
// its client certificate (e.g. "sslrootcert=FILE"); Cert is "" when the
// backend has none.
type Hints struct {
	CA, Cert string
}

// Explain describes a TLS failure in err for a server at host, saying
// which setting fixes it. It returns "" when err is not a TLS failure.
func Explain(err error, host string, h Hints) string {
	var unknown x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var record tls.RecordHeaderError
	var remote *net.OpError // a TLS alert the server sent (crypto/tls wraps it so)
	switch {
	case errors.As(err, &unknown):
		return fmt.Sprintf("the TLS certificate of %s is not signed by a trusted CA: give the CA that signed it with %s", host, h.CA)
	case errors.As(err, &hostErr):
		return fmt.Sprintf("the TLS certificate of %s is for %s, not %q: connect by a name the certificate lists, or have it reissued for %q",
			host, certNames(hostErr.Certificate), hostErr.Host, hostErr.Host)
	case errors.As(err, &invalid):
		return fmt.Sprintf("the TLS certificate of %s is not valid (%s): renew it on the server", host, invalidReason(invalid))
	case errors.As(err, &record):
		return fmt.Sprintf("%s does not answer in TLS: is TLS enabled on the server, and is this its TLS port?", host)
	case errors.As(err, &remote) && remote.Op == "remote error" && h.Cert != "":
		return fmt.Sprintf("%s refused the TLS handshake (%v): if it checks client certificates, give one signed by a CA it trusts with %s", host, remote.Err, h.Cert)
	case errors.As(err, &remote) && remote.Op == "remote error":
		return fmt.Sprintf("%s refused the TLS handshake (%v)", host, remote.Err)
	}
	return ""
}

// certNames lists the names a certificate holds, for messages.
func certNames(c *x509.Certificate) string {
	if c == nil {
		return "other names"
	}
	var names []string
	names = append(names, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 && c.Subject.CommonName != "" {
		names = append(names, c.Subject.CommonName+" (common name only; modern clients need a subject alternative name)")
	}
	if len(names) == 0 {
		return "no names"
	}
	return strings.Join(names, ", ")
}

func invalidReason(e x509.CertificateInvalidError) string {
	switch e.Reason {
	case x509.Expired:
		return "expired or not yet valid"
	case x509.NotAuthorizedToSign:
		return "its issuer may not sign certificates"
	case x509.IncompatibleUsage:
		return "not meant for a server"
	}
	return e.Error()
}
