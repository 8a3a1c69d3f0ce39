package volume

import (
	"context"
	"fmt"
	"time"

	"shoal/internal/meta"
	"shoal/internal/object"
	"shoal/internal/object/objopen"
	"shoal/internal/secret"
)

// The one retry policy for object operations (object.WithRetry): every
// store a volume's users get from here retries a failed request up to
// StoreAttempts times with backoff from StoreBackoff (at most 1.5 s of
// waiting). Nothing else retries a request: the S3 client is told not to
// (s3store.DefaultMaxRetries), and the data layer tries each upload once,
// keeping a block that failed for a later Flush.
const (
	StoreAttempts = 5
	StoreBackoff  = 100 * time.Millisecond
)

// StoreHook wraps a backend below the retry layer, so it sees every
// request the backend receives (each retry too): mounts pass their
// metrics here (metrics.Registry.Objects). Nil adds nothing.
type StoreHook func(object.Store) object.Store

// OpenStore opens the object store of a storage kind and bucket (as
// `shoal format` records them) the way every Shoal process opens one:
// the backend (objopen), hook over it, and the retry policy on top. Mounts,
// fsck, gc, load, claims and status all come here; blocks then go through
// BlockStore over the result.
func OpenStore(ctx context.Context, storage, bucket string, hook StoreHook) (object.Store, error) {
	raw, err := objopen.Open(ctx, storage, bucket)
	if err != nil {
		return nil, fmt.Errorf("opening the object store (%s %s): %w", storage, secret.Mask(bucket), err)
	}
	return retrying(raw, hook), nil
}

// OpenObjects is OpenStore for the store a volume's format names.
func OpenObjects(ctx context.Context, f meta.Format, hook StoreHook) (object.Store, error) {
	return OpenStore(ctx, f.Storage, f.Bucket, hook)
}

// retrying puts hook and the retry policy over a backend.
func retrying(raw object.Store, hook StoreHook) object.Store {
	if hook != nil {
		raw = hook(raw)
	}
	return object.WithRetry(raw, StoreAttempts, StoreBackoff)
}
