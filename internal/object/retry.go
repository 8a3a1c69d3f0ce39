package object

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"
)

// Retry policy (WithRetry):
//
// Every operation is tried up to attempts times. Between tries it sleeps
// base·2^(try-1), capped at maxBackoff, with jitter: a uniform pick in the
// upper half of that interval, so clients retrying the same outage spread
// out. The total wait is therefore bounded: with base 100ms and 5 attempts
// it is at most 0.1+0.2+0.4+0.8 = 1.5 s plus the operations' own time.
//
// Not retried: ErrNotExist (an answer, not a failure), errors marked with
// Permanent (bad key, access denied, ...), and anything after the caller's
// context is done. A backend's own per-request timeout is retried, because
// the caller's context is still alive.
//
// Put needs the bytes again for a second try: a reader that is an
// io.Seeker is rewound to where it started; any other reader is first
// read into memory (objects are blocks of a few MiB), and a failure of that
// reader is returned at once, since retrying the store cannot cure it.
//
// Get retries the call, and also the body: a read error in the middle of an
// object re-issues Get from the first byte not yet delivered, within the
// same attempt budget.
//
// A store made by WithRetryHook tells its hook of every retry, after the
// backoff and before the request, with the operation and the time it
// waited: what a mount's metrics count (each attempt the backend received
// is counted under the retries, by the hook over the backend).

// maxBackoff caps one sleep between tries.
const maxBackoff = 10 * time.Second

// maxBufferedPut is the largest non-seekable Put body buffered for retries;
// larger ones are tried once.
const maxBufferedPut = 64 << 20

// permanentError marks an error that retrying cannot fix.
type permanentError struct{ err error }

func (p permanentError) Error() string { return p.err.Error() }
func (p permanentError) Unwrap() error { return p.err }

// Permanent marks err as not worth retrying; errors.Is and errors.As still
// see through it. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent reports whether err, or an error it wraps, was marked with
// Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// RetryHook is told of each retry a store from WithRetryHook makes: the
// operation ("get", "put", "head", "delete" or "list") and the backoff it
// waited before it. It is called from the goroutines of the operations,
// concurrently, and must be cheap.
type RetryHook func(op string, waited time.Duration)

// retryStore is the wrapper WithRetry returns.
type retryStore struct {
	s        Store
	attempts int
	base     time.Duration
	hook     RetryHook // nil: none
}

var (
	_ Store     = (*retryStore)(nil)
	_ Unwrapper = (*retryStore)(nil)
)

// WithRetry returns s with transient failures retried: up to attempts tries
// per operation (at least 1), with exponential backoff from base plus
// jitter. See the policy above.
func WithRetry(s Store, attempts int, base time.Duration) Store {
	return WithRetryHook(s, attempts, base, nil)
}

// WithRetryHook is WithRetry telling hook (if not nil) of every retry.
func WithRetryHook(s Store, attempts int, base time.Duration, hook RetryHook) Store {
	return &retryStore{s: s, attempts: max(attempts, 1), base: max(base, time.Millisecond), hook: hook}
}

// Unwrap returns the wrapped store.
func (r *retryStore) Unwrap() Store { return r.s }

// String implements Store.
func (r *retryStore) String() string { return r.s.String() }

// retryable reports whether err deserves another try under ctx.
func retryable(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() == nil && !errors.Is(err, ErrNotExist) && !IsPermanent(err)
}

// backoff sleeps before try number try (1-based retry count) of op and
// tells the hook, or returns the context's error if it ends first.
func (r *retryStore) backoff(ctx context.Context, op string, try int) error {
	d := r.base << min(try-1, 30)
	if d > maxBackoff || d <= 0 {
		d = maxBackoff
	}
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		if r.hook != nil {
			r.hook(op, d)
		}
		return nil
	}
}

// do runs call, operation op, until it succeeds, fails for good, or the
// attempts run out.
func (r *retryStore) do(ctx context.Context, op string, call func() error) error {
	err := call()
	for try := 1; try < r.attempts && retryable(ctx, err); try++ {
		if berr := r.backoff(ctx, op, try); berr != nil {
			return fmt.Errorf("%w (gave up retrying: %w)", err, berr)
		}
		err = call()
	}
	return err
}

// Head implements Store.
func (r *retryStore) Head(ctx context.Context, key string) (Info, error) {
	var info Info
	err := r.do(ctx, "head", func() (err error) {
		info, err = r.s.Head(ctx, key)
		return err
	})
	return info, err
}

// Delete implements Store.
func (r *retryStore) Delete(ctx context.Context, key string) error {
	return r.do(ctx, "delete", func() error { return r.s.Delete(ctx, key) })
}

// List implements Store.
func (r *retryStore) List(ctx context.Context, prefix, after string, limit int) ([]Info, error) {
	var infos []Info
	err := r.do(ctx, "list", func() (err error) {
		infos, err = r.s.List(ctx, prefix, after, limit)
		return err
	})
	return infos, err
}

// Put implements Store, replaying the body on each try (see the policy).
func (r *retryStore) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	rewind, err := replayable(body, size, r.attempts > 1)
	if err != nil {
		return fmt.Errorf("put %q: read body: %w", key, err)
	}
	if rewind == nil {
		return r.s.Put(ctx, key, body, size)
	}
	return r.do(ctx, "put", func() error {
		rd, err := rewind()
		if err != nil {
			return Permanent(fmt.Errorf("put %q: rewind body: %w", key, err))
		}
		return r.s.Put(ctx, key, rd, size)
	})
}

// replayable returns a function that yields body from its start each time
// it is called, or nil when body can only be read once.
func replayable(body io.Reader, size int64, want bool) (func() (io.Reader, error), error) {
	if !want {
		return nil, nil
	}
	if sk, ok := body.(io.Seeker); ok {
		start, err := sk.Seek(0, io.SeekCurrent)
		if err == nil {
			return func() (io.Reader, error) {
				_, err := sk.Seek(start, io.SeekStart)
				return body, err
			}, nil
		}
	}
	if size < 0 || size > maxBufferedPut {
		return nil, nil
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(body, buf); err != nil {
		return nil, err
	}
	if n, _ := io.ReadFull(body, make([]byte, 1)); n > 0 {
		return nil, fmt.Errorf("reader has more than %d bytes", size)
	}
	return func() (io.Reader, error) { return bytes.NewReader(buf), nil }, nil
}
