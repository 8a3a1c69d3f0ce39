package s3store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"shoal/internal/object"
	"shoal/internal/object/objecttest"
	"shoal/internal/testutil"
)

// testConfig returns the SHOAL_TEST_S3 bucket with a key prefix unique to
// this test, so runs and packages sharing the server never see each
// other's objects. It skips (or fails, per SHOAL_REQUIRE_SERVICES) when
// the variable is unset.
func testConfig(t *testing.T) Config {
	t.Helper()
	cfg, err := ParseURL(testutil.S3URL(t))
	if err != nil {
		t.Fatal(err)
	}
	var id [6]byte
	rand.Read(id[:])
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	cfg.Prefix += "test-" + name + "-" + hex.EncodeToString(id[:]) + "/"
	cfg.CreateBucket = true
	cfg.Timeout = 30 * time.Second
	return cfg
}

// newTestStore makes a store under a unique prefix, checks it, and removes
// its objects when the test ends.
func newTestStore(t *testing.T) *Store {
	t.Helper()
	ctx := context.Background()
	s, err := New(ctx, testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { clear(t, s) })
	return s
}

// clear deletes everything under the store's prefix.
func clear(t *testing.T, s *Store) {
	ctx := context.Background()
	infos, err := s.List(ctx, "", "", 0)
	if err != nil {
		t.Errorf("cleanup list: %v", err)
		return
	}
	for _, in := range infos {
		if err := s.Delete(ctx, in.Key); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
}

func TestConformance(t *testing.T) {
	objecttest.Run(t, func(t *testing.T) object.Store { return newTestStore(t) })
}

func TestConformanceWithRetry(t *testing.T) {
	objecttest.Run(t, func(t *testing.T) object.Store {
		return object.WithRetry(newTestStore(t), 3, 10*time.Millisecond)
	})
}

func TestCheckOK(t *testing.T) {
	s := newTestStore(t)
	if err := s.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.String(), s.Config().SecretKey) && s.Config().SecretKey != "" {
		t.Fatalf("String() shows the secret: %s", s)
	}
}

func checkErr(t *testing.T, cfg Config) error {
	t.Helper()
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return s.Check(ctx)
}

func TestCheckUnreachable(t *testing.T) {
	cfg := testConfig(t)
	cfg.Endpoint = "127.0.0.1:1" // nothing listens on port 1
	cfg.MaxRetries = 1
	err := checkErr(t, cfg)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "cannot reach") {
		t.Fatalf("Check(wrong port) = %v, want 'cannot reach'", err)
	}
}

func TestCheckBadCredentials(t *testing.T) {
	cfg := testConfig(t)
	cfg.SecretKey = "wrong-" + cfg.SecretKey
	err := checkErr(t, cfg)
	if !errors.Is(err, ErrCredentials) || !strings.Contains(err.Error(), "credentials") {
		t.Fatalf("Check(wrong secret) = %v, want a credentials message", err)
	}
	cfg = testConfig(t)
	cfg.AccessKey = "nosuchuser"
	if err := checkErr(t, cfg); !errors.Is(err, ErrCredentials) {
		t.Fatalf("Check(wrong access key) = %v, want ErrCredentials", err)
	}
}

func TestCheckBucketMissing(t *testing.T) {
	cfg := testConfig(t)
	var id [4]byte
	rand.Read(id[:])
	cfg.Bucket = "shoal-missing-" + hex.EncodeToString(id[:])
	cfg.CreateBucket = false
	err := checkErr(t, cfg)
	if !errors.Is(err, ErrNoBucket) || !strings.Contains(err.Error(), cfg.Bucket) {
		t.Fatalf("Check(missing bucket) = %v, want ErrNoBucket naming it", err)
	}
	cfg.CreateBucket = true
	if err := checkErr(t, cfg); err != nil {
		t.Fatalf("Check(CreateBucket) = %v", err)
	}
	s, _ := New(context.Background(), cfg)
	if err := s.client.RemoveBucket(context.Background(), cfg.Bucket); err != nil {
		t.Errorf("remove test bucket: %v", err)
	}
}

func TestPermanentErrors(t *testing.T) {
	cfg := testConfig(t)
	cfg.SecretKey = "wrong"
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Head(context.Background(), "x")
	if err == nil || errors.Is(err, object.ErrNotExist) || !object.IsPermanent(err) {
		t.Fatalf("Head with a bad secret = %v, want a permanent error", err)
	}
}

// TestStreamedPut stores a body above the buffering limit, which goes to
// S3 unbuffered (multipart) and must still read back whole.
func TestStreamedPut(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	const size = maxBuffered + 1<<20
	data := make([]byte, size)
	rand.Read(data)
	body := struct{ io.Reader }{bytes.NewReader(data)} // hide Seek/ReadAt
	if err := s.Put(ctx, "big", body, size); err != nil {
		t.Fatal(err)
	}
	rc, err := s.Get(ctx, "big", size-100, -1)
	if err != nil {
		t.Fatal(err)
	}
	tail, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(tail, data[size-100:]) {
		t.Fatalf("tail of streamed object: %d bytes, %v", len(tail), err)
	}
	if info, err := s.Head(ctx, "big"); err != nil || info.Size != size {
		t.Fatalf("Head = %+v, %v", info, err)
	}
}
