package object

import (
	"context"
	"errors"
	"io"
)

// Get implements Store. The returned reader resumes after a mid-body read
// error by re-issuing Get from the next undelivered byte, sharing the
// attempt budget with the initial call.
func (r *retryStore) Get(ctx context.Context, key string, off, limit int64) (io.ReadCloser, error) {
	rr := &retryReader{r: r, ctx: ctx, key: key, off: off, limit: limit}
	if err := rr.open(); err != nil {
		return nil, err
	}
	return rr, nil
}

// retryReader is a Get body that reopens itself on read errors.
type retryReader struct {
	r      *retryStore
	ctx    context.Context
	key    string
	off    int64 // next byte to deliver
	limit  int64 // bytes still wanted; < 0: to the end
	tries  int   // tries used so far
	broken bool  // body failed; reopen before the next read
	body   io.ReadCloser
}

// open (re)issues Get for the remaining range, retrying within the budget.
func (rr *retryReader) open() error {
	var err error
	for {
		if rr.tries > 0 {
			if berr := rr.r.backoff(rr.ctx, "get", rr.tries); berr != nil {
				return errors.Join(err, berr)
			}
		}
		rr.tries++
		rr.body, err = rr.r.s.Get(rr.ctx, rr.key, rr.off, rr.limit)
		if err == nil || !retryable(rr.ctx, err) || rr.tries >= rr.r.attempts {
			return err
		}
	}
}

// Read implements io.Reader. A retryable error that came with data is
// held back: the data is returned now and the body reopened on the next
// call, so no byte is delivered twice or skipped.
func (rr *retryReader) Read(p []byte) (int, error) {
	if rr.limit == 0 {
		return 0, io.EOF
	}
	if rr.limit > 0 && int64(len(p)) > rr.limit {
		p = p[:rr.limit]
	}
	for {
		if rr.broken {
			rr.broken = false
			rr.body.Close()
			if err := rr.open(); err != nil {
				rr.body = errBody{err}
				return 0, err
			}
		}
		n, err := rr.body.Read(p)
		rr.off += int64(n)
		if rr.limit > 0 {
			rr.limit -= int64(n)
		}
		if err == nil || err == io.EOF || !retryable(rr.ctx, err) || rr.tries >= rr.r.attempts {
			return n, err
		}
		rr.broken = true
		if n > 0 {
			return n, nil
		}
	}
}

// Close implements io.Closer.
func (rr *retryReader) Close() error { return rr.body.Close() }

// errBody is a closed-over failure left in place after a failed reopen.
type errBody struct{ err error }

func (e errBody) Read([]byte) (int, error) { return 0, e.err }
func (e errBody) Close() error             { return nil }
