package s3store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/minio/minio-go/v7"
)

// Errors Check returns (wrapped, with details), so callers such as
// `shoal format` can tell the user what to fix.
var (
	// ErrUnreachable: no S3 answer from the endpoint (refused, DNS, TLS,
	// timeout).
	ErrUnreachable = errors.New("cannot reach S3 endpoint")
	// ErrCredentials: the service rejected the access key or signature.
	ErrCredentials = errors.New("S3 rejected the credentials")
	// ErrNoBucket: the bucket does not exist and CreateBucket is off.
	ErrNoBucket = errors.New("bucket does not exist")
	// ErrNotWritable: the bucket exists but a probe object could not be
	// written, read back or deleted.
	ErrNotWritable = errors.New("bucket is not usable")
)

// Check verifies that the bucket is reachable and writable: it looks the
// bucket up (creating it if Config.CreateBucket is set), then puts, reads
// back and deletes a probe object under the store's prefix.
func (s *Store) Check(ctx context.Context) error {
	ctx, cancel := s.timeout(ctx)
	defer cancel()
	exists, err := s.client.BucketExists(ctx, s.cfg.Bucket)
	if err != nil {
		return s.explain(err)
	}
	if !exists {
		if !s.cfg.CreateBucket {
			return fmt.Errorf("%w: %q at %s (create it, or enable bucket creation)", ErrNoBucket, s.cfg.Bucket, s.cfg.Endpoint)
		}
		err := s.client.MakeBucket(ctx, s.cfg.Bucket, minio.MakeBucketOptions{Region: s.cfg.Region})
		if err != nil && code(err) != "BucketAlreadyOwnedByYou" {
			return fmt.Errorf("create bucket %q: %w", s.cfg.Bucket, s.explain(err))
		}
	}
	return s.probe(ctx)
}

// probe writes, reads and deletes a uniquely named object.
func (s *Store) probe(ctx context.Context) error {
	var id [8]byte
	rand.Read(id[:])
	key := ".shoal-probe-" + hex.EncodeToString(id[:])
	data := []byte("shoal probe " + key)
	if err := s.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
		return fmt.Errorf("%w: write probe: %w", ErrNotWritable, s.explain(err))
	}
	rc, err := s.Get(ctx, key, 0, -1)
	if err != nil {
		return fmt.Errorf("%w: read probe back: %w", ErrNotWritable, s.explain(err))
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err == nil && !bytes.Equal(got, data) {
		err = fmt.Errorf("got %d bytes %q, want %q", len(got), got, data)
	}
	if err != nil {
		return fmt.Errorf("%w: read probe back: %w", ErrNotWritable, err)
	}
	if err := s.Delete(ctx, key); err != nil {
		return fmt.Errorf("%w: delete probe: %w", ErrNotWritable, s.explain(err))
	}
	return nil
}

// explain classifies err from a request into one of Check's errors.
func (s *Store) explain(err error) error {
	if hint := s.tlsHint(err); hint != "" {
		return fmt.Errorf("%w %s: %s: %w", ErrUnreachable, s.endpointURL(), hint, err)
	}
	switch code(err) {
	case "":
		var netErr net.Error
		if errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%w %s (is the server running and the URL right?): %w", ErrUnreachable, s.endpointURL(), err)
		}
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken", "AccessDenied":
		return fmt.Errorf("%w at %s (access key %q; check the access and secret key, and the bucket policy): %w",
			ErrCredentials, s.endpointURL(), s.cfg.AccessKey, err)
	case "NoSuchBucket":
		return fmt.Errorf("%w: %q at %s: %w", ErrNoBucket, s.cfg.Bucket, s.cfg.Endpoint, err)
	}
	return err
}

// endpointURL is the endpoint with its scheme, for messages.
func (s *Store) endpointURL() string {
	return s.client.EndpointURL().String()
}
