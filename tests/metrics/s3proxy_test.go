package metrics_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// s3Proxy is an HTTP proxy in front of the test S3 service (MinIO) that
// sees every block put (a PUT of a key under chunks/) and can fail or
// hold some of them. The client signs for the proxy's host and the proxy
// keeps that Host header, so MinIO accepts the signatures.
type s3Proxy struct {
	srv *httptest.Server
	rp  *httputil.ReverseProxy

	mu       sync.Mutex
	fail     int           // block puts still to answer with 503 SlowDown
	puts     int           // block puts received (failed ones included)
	failed   int           // block puts answered with 503
	holdOver int           // hold block puts with bodies over this many bytes (0: none)
	held     int           // block puts held so far
	release  chan struct{} // closed by Release to let held puts through
}

// newS3Proxy starts a proxy to the S3 service at s3URL (http://host:port/...).
func newS3Proxy(t *testing.T, s3URL string) *s3Proxy {
	t.Helper()
	u, err := url.Parse(s3URL)
	if err != nil {
		t.Fatal(err)
	}
	p := &s3Proxy{}
	p.rp = httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() { p.Release(); p.srv.Close() })
	return p
}

// URL is bucketURL (a URL of the S3 service) with the proxy as its host.
func (p *s3Proxy) URL(t *testing.T, bucketURL string) string {
	t.Helper()
	u, err := url.Parse(bucketURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = strings.TrimPrefix(p.srv.URL, "http://")
	return u.String()
}

// FailPuts answers the next n block puts with 503 SlowDown.
func (p *s3Proxy) FailPuts(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fail = n
}

// HoldPutsOver holds every block put whose body is larger than size
// until Release.
func (p *s3Proxy) HoldPutsOver(size int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.holdOver == 0 {
		p.release = make(chan struct{})
	}
	p.holdOver = size
}

// Release lets held puts through and holds no more.
func (p *s3Proxy) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.holdOver != 0 {
		p.holdOver = 0
		close(p.release)
	}
}

// Counts returns the block puts received, those failed, and those held.
func (p *s3Proxy) Counts() (puts, failed, held int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.puts, p.failed, p.held
}

func (p *s3Proxy) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut || !strings.Contains(r.URL.Path, "/chunks/") {
		p.rp.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	p.mu.Lock()
	p.puts++
	fail := p.fail > 0
	if fail {
		p.fail--
		p.failed++
	}
	hold := !fail && p.holdOver > 0 && len(body) > p.holdOver
	if hold {
		p.held++
	}
	release := p.release
	p.mu.Unlock()
	if fail {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+
			`<Error><Code>SlowDown</Code><Message>injected by the test proxy</Message><Resource>%s</Resource><RequestId>test</RequestId></Error>`, r.URL.Path)
		return
	}
	if hold {
		<-release
	}
	p.rp.ServeHTTP(w, r)
}
