package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"

	"shoal/internal/object"
	"shoal/internal/tlsconf"
)

// maxBuffered is the largest Put body read into memory first (so minio-go
// can sign it with its length and hash); larger bodies stream. minio-go
// makes one attempt either way (DefaultMaxRetries): the volume's one retry
// policy (volume.OpenStore) retries above the store.
const maxBuffered = 16 << 20

// bufPool recycles Put buffers of block size (4 MiB).
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<20); return &b }}

// Store is an S3 bucket (or a prefix inside one) as an object.Store.
type Store struct {
	cfg    Config
	client *minio.Client
}

var _ object.Store = (*Store)(nil)

// New returns a store for cfg. It checks the configuration but makes no
// request to the store (without keys in cfg it asks the credential chain
// once, see the package doc); call Check to verify the bucket is
// reachable and writable.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Endpoint == "" || cfg.Bucket == "" {
		return nil, fmt.Errorf("s3store: endpoint and bucket are required (got %q, %q)", cfg.Endpoint, cfg.Bucket)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	tr, err := minio.DefaultTransport(cfg.Secure)
	if err != nil {
		return nil, fmt.Errorf("s3store: transport: %w", err)
	}
	if cfg.CAFile != "" {
		if !cfg.Secure {
			return nil, fmt.Errorf("s3store: %s: a CA bundle needs an https endpoint", cfg)
		}
		if err := (tlsconf.Files{CA: cfg.CAFile}).Apply(tr.TLSClientConfig); err != nil {
			return nil, fmt.Errorf("s3store: %s: %w", cfg, err)
		}
	}
	tr.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.MaxIdleConnsPerHost = 64
	lookup := minio.BucketLookupPath
	if cfg.VirtualHost {
		lookup = minio.BucketLookupDNS
	}
	client, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:        cfg.credentials(),
		Secure:       cfg.Secure,
		Transport:    tr,
		Region:       cfg.Region,
		BucketLookup: lookup,
		MaxRetries:   cfg.MaxRetries,
	})
	if err != nil {
		return nil, fmt.Errorf("s3store: %s: %w", cfg, err)
	}
	return &Store{cfg: cfg, client: client}, nil
}

// Config returns the configuration the store was made with, defaults
// filled in.
func (s *Store) Config() Config { return s.cfg }

// String implements object.Store.
func (s *Store) String() string { return s.cfg.String() }

// timeout bounds one call by the configured timeout.
func (s *Store) timeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.Timeout)
}

// Head implements object.Store.
func (s *Store) Head(ctx context.Context, key string) (object.Info, error) {
	ctx, cancel := s.timeout(ctx)
	defer cancel()
	oi, err := s.client.StatObject(ctx, s.cfg.Bucket, s.cfg.Prefix+key, minio.StatObjectOptions{})
	if err != nil {
		return object.Info{}, s.wrap("head", key, err)
	}
	return object.Info{Key: key, Size: oi.Size, ModTime: oi.LastModified}, nil
}

// Delete implements object.Store. S3 answers success for an absent key.
func (s *Store) Delete(ctx context.Context, key string) error {
	ctx, cancel := s.timeout(ctx)
	defer cancel()
	err := s.client.RemoveObject(ctx, s.cfg.Bucket, s.cfg.Prefix+key, minio.RemoveObjectOptions{})
	if err != nil && !errors.Is(s.wrap("delete", key, err), object.ErrNotExist) {
		return s.wrap("delete", key, err)
	}
	return nil
}

// Put implements object.Store; see the package doc on buffering.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if size < 0 {
		return object.Permanent(fmt.Errorf("s3store: put %q: negative size %d", key, size))
	}
	body := r
	if size <= maxBuffered {
		bp, err := readBody(r, size)
		if err != nil {
			return fmt.Errorf("s3store: put %q: read body: %w", key, err)
		}
		defer bufPool.Put(bp)
		body = bytes.NewReader(*bp)
	}
	ctx, cancel := s.timeout(ctx)
	defer cancel()
	_, err := s.client.PutObject(ctx, s.cfg.Bucket, s.cfg.Prefix+key, body, size, minio.PutObjectOptions{
		ContentType: "application/octet-stream",
	})
	if err != nil {
		return s.wrap("put", key, err)
	}
	return nil
}

// readBody reads exactly size bytes of r into a pooled buffer.
func readBody(r io.Reader, size int64) (*[]byte, error) {
	bp := bufPool.Get().(*[]byte)
	if int64(cap(*bp)) < size {
		*bp = make([]byte, size)
	}
	*bp = (*bp)[:size]
	if _, err := io.ReadFull(r, *bp); err != nil {
		bufPool.Put(bp)
		return nil, err
	}
	if n, _ := io.ReadFull(r, make([]byte, 1)); n > 0 {
		bufPool.Put(bp)
		return nil, fmt.Errorf("reader has more than %d bytes", size)
	}
	return bp, nil
}

// Get implements object.Store. The timeout covers reading the body and
// ends when the reader is closed.
func (s *Store) Get(ctx context.Context, key string, off, limit int64) (io.ReadCloser, error) {
	off = max(off, 0)
	if limit == 0 {
		if _, err := s.Head(ctx, key); err != nil {
			return nil, err
		}
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	var opts minio.GetObjectOptions
	switch {
	case limit > 0:
		opts.SetRange(off, off+limit-1)
	case off > 0:
		opts.SetRange(off, 0)
	}
	ctx, cancel := s.timeout(ctx)
	rc, _, _, err := minio.Core{Client: s.client}.GetObject(ctx, s.cfg.Bucket, s.cfg.Prefix+key, opts)
	if err != nil {
		cancel()
		if code(err) == "InvalidRange" { // off at or past the end
			return io.NopCloser(bytes.NewReader(nil)), nil
		}
		return nil, s.wrap("get", key, err)
	}
	return &body{ReadCloser: rc, cancel: cancel}, nil
}

// body is a GetObject response body that releases its timeout on Close.
type body struct {
	io.ReadCloser
	cancel context.CancelFunc
}

// Close closes the response body and ends the call's timeout.
func (b *body) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// List implements object.Store.
func (s *Store) List(ctx context.Context, prefix, after string, limit int) ([]object.Info, error) {
	ctx, cancel := s.timeout(ctx)
	defer cancel() // also stops the listing goroutine when we break early
	opts := minio.ListObjectsOptions{Prefix: s.cfg.Prefix + prefix, Recursive: true, MaxKeys: 1000}
	if after != "" {
		opts.StartAfter = s.cfg.Prefix + after
	}
	if limit > 0 && limit < opts.MaxKeys {
		opts.MaxKeys = limit
	}
	var out []object.Info
	for oi := range s.client.ListObjectsIter(ctx, s.cfg.Bucket, opts) {
		if oi.Err != nil {
			return nil, s.wrap("list", prefix, oi.Err)
		}
		key, ok := strings.CutPrefix(oi.Key, s.cfg.Prefix)
		if !ok || !strings.HasPrefix(key, prefix) || key <= after {
			continue // a server that ignored prefix or start-after
		}
		out = append(out, object.Info{Key: key, Size: oi.Size, ModTime: oi.LastModified})
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out, nil
}

// code returns the S3 error code of err, or "" for a non-S3 error.
func code(err error) string {
	var resp minio.ErrorResponse
	if errors.As(err, &resp) {
		return resp.Code
	}
	return ""
}

// status returns the HTTP status of an S3 error, or 0.
func status(err error) int {
	var resp minio.ErrorResponse
	if errors.As(err, &resp) {
		return resp.StatusCode
	}
	return 0
}

// wrap maps a minio-go error: NoSuchKey → ErrNotExist; client errors other
// than timeouts and throttling → Permanent.
func (s *Store) wrap(op, key string, err error) error {
	if code(err) == "NoSuchKey" {
		return fmt.Errorf("s3store: %s %q: %w", op, key, object.ErrNotExist)
	}
	if hint := s.tlsHint(err); hint != "" {
		return object.Permanent(fmt.Errorf("s3store: %s %q in %s: %s: %w", op, key, s.cfg, hint, err))
	}
	err = fmt.Errorf("s3store: %s %q in %s: %w", op, key, s.cfg, err)
	if st := status(err); st >= 400 && st < 500 && st != http.StatusRequestTimeout && st != http.StatusTooManyRequests {
		return object.Permanent(err)
	}
	return err
}

// tlsHint explains a failed TLS verification ("" for other errors). It
// cannot succeed on a retry, so callers treat it as permanent.
func (s *Store) tlsHint(err error) string {
	return tlsconf.Explain(err, s.cfg.Endpoint, tlsconf.Hints{CA: "?ca=FILE on the bucket URL or " + EnvCABundle})
}
