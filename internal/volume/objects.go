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

// The one retry policy for object operations (object.WithRetryHook): every
// store a volume's users get from here retries a failed request up to
// StoreAttempts times, backing off from StoreBackoff, doubling up to 10 s,
// with jitter: 16 to 33 s of waiting in all, so that a store restarting
// within that time costs a flush or a read a delay, not an error (as the
// engines retry their transactions for about 30 s). Nothing else retries a
// request: the S3 client is told not to (s3store.DefaultMaxRetries), and
// the data layer tries each upload once, keeping a block that failed for a
// later Flush. So a put the store fails n times (n < StoreAttempts) reaches
// it n+1 times, and a StoreHook sees n+1 requests, n failures and n
// retries (tests/metrics TestObjectPutRetriedByOnePolicy, through a mount
// on MinIO behind a proxy that fails puts).
const (
	StoreAttempts = 10
	StoreBackoff  = 100 * time.Millisecond
)

// storeBackoff is StoreBackoff; tests shorten it.
var storeBackoff = StoreBackoff

// StoreHook observes the object store a volume opens: mounts pass their
// metrics (metrics.Registry). A nil StoreHook adds nothing.
type StoreHook interface {
	// Objects wraps the backend directly, below the retry policy, so the
	// wrapper sees every request the backend receives (each retry too).
	Objects(object.Store) object.Store
	// ObjectRetry is told of each retry the policy makes, with the
	// operation and the backoff it waited first (object.RetryHook).
	ObjectRetry(op string, waited time.Duration)
}

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
	if hook == nil {
		return object.WithRetry(raw, StoreAttempts, storeBackoff)
	}
	return object.WithRetryHook(hook.Objects(raw), StoreAttempts, storeBackoff, hook.ObjectRetry)
}
