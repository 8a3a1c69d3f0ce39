package tls

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"shoal/internal/object/s3store"
	"shoal/internal/testutil"
	"shoal/internal/tlsconf"
)

// Credentials of the dedicated MinIO; the shared one (scripts/minio.sh)
// uses the same.
const (
	minioUser   = "shoaltest"
	minioSecret = "shoaltest-secret-key"
	minioBucket = "shoal-tls"
)

// TestS3TLS: an https bucket with its CA given by ca= formats and mounts a
// volume (format also checks the bucket), AWS_CA_BUNDLE does the same, and
// the wrong CA and plain http are refused.
func TestS3TLS(t *testing.T) {
	testutil.S3URL(t) // the service skip rules
	s, p := startMinIOTLS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", minioUser)
	t.Setenv("AWS_SECRET_ACCESS_KEY", minioSecret)
	t.Setenv(s3store.EnvCABundle, "")
	bucket := func(scheme, prefix, ca string) string {
		u := fmt.Sprintf("%s://%s/%s/%s", scheme, s.addr(), minioBucket, prefix)
		if ca != "" {
			u += "?ca=" + url.QueryEscape(ca)
		}
		return u
	}
	format := func(bucketURL string) []string {
		return []string{"format", "sqlite://" + filepath.Join(s.dir, "x.db"), "--name", "t", "--storage", "s3", "--bucket", bucketURL}
	}

	v := testutil.NewVolumeWith(t, testutil.VolumeConfig{FormatArgs: []string{"--storage", "s3", "--bucket", bucket("https", "v1", p.ca.File)}})
	roundTrip(t, v)

	mustFail(t, format(bucket("https", "v2", p.other.File)),
		"is not signed by a trusted CA", "?ca=FILE on the bucket URL or AWS_CA_BUNDLE")
	mustFail(t, format(bucket("https", "v3", "")), "is not signed by a trusted CA") // system roots
	// MinIO serves only https, so the volume above used TLS.
	mustFail(t, format(bucket("http", "v4", "")), "HTTP request to an HTTPS server")

	t.Setenv(s3store.EnvCABundle, p.ca.File)
	testutil.NewVolumeWith(t, testutil.VolumeConfig{FormatArgs: []string{"--storage", "s3", "--bucket", bucket("https", "v5", "")}})
}

// startMinIOTLS runs a MinIO that serves https with a certificate for
// 127.0.0.1 and localhost, and creates the test bucket.
func startMinIOTLS(t *testing.T) (*server, pki) {
	t.Helper()
	s := newServer(t, "minio")
	p := newPKI(t, s.dir)
	certs := filepath.Join(s.dir, "certs")
	if err := os.MkdirAll(filepath.Join(certs, "CAs"), 0o755); err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{p.serverCert: "public.crt", p.serverKey: "private.key"} {
		if err := os.Rename(src, filepath.Join(certs, dst)); err != nil {
			t.Fatal(err)
		}
	}
	s.argv = []string{minioBinary(t), "server", "--quiet", "--address", s.addr(), "--certs-dir", certs, filepath.Join(s.dir, "data")}
	s.env = []string{"MINIO_ROOT_USER=" + minioUser, "MINIO_ROOT_PASSWORD=" + minioSecret,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off"}
	cfg, err := tlsconf.Files{CA: p.ca.File}.Config("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	t.Cleanup(client.CloseIdleConnections)
	s.start(t, func() error { return minioReady(client, s.addr()) })
	makeBucket(t, fmt.Sprintf("https://%s/%s?ca=%s", s.addr(), minioBucket, url.QueryEscape(p.ca.File)))
	return s, p
}

func minioReady(client *http.Client, addr string) error {
	resp, err := client.Get("https://" + addr + "/minio/health/ready")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: HTTP %d", resp.StatusCode)
	}
	return nil
}

// makeBucket creates the bucket of a bucket URL, retrying while a fresh
// MinIO still answers "Server not initialized yet".
func makeBucket(t *testing.T, bucketURL string) {
	t.Helper()
	cfg, err := s3store.ParseURL(bucketURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.AccessKey, cfg.SecretKey, cfg.CreateBucket = minioUser, minioSecret, true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		st, err := s3store.New(ctx, cfg)
		if err == nil {
			err = st.Check(ctx)
		}
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("creating bucket %s: %v", bucketURL, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// minioBinary is where scripts/minio.sh builds MinIO (SHOAL_MINIO_BIN
// overrides).
func minioBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("SHOAL_MINIO_BIN")
	if bin == "" {
		cache := os.Getenv("SHOAL_CACHE")
		if cache == "" {
			cache = "/var/cache/shoal"
		}
		bin = filepath.Join(cache, "bin", "minio")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no MinIO binary at %s (scripts/minio.sh start builds it; SHOAL_MINIO_BIN overrides): %v", bin, err)
	}
	return bin
}
