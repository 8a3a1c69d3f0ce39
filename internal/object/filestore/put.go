package filestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// putAttempts bounds how often Put re-creates a directory that a
// concurrent Delete pruned between mkdir and temp-file creation.
const putAttempts = 10

// Put implements object.Store: write a temp file, fsync, rename, fsync dir.
// A reader with fewer or more than size bytes fails the Put.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("filestore: put: %w", err)
	}
	if err := s.put(ctx, s.path(key), r, size); err != nil {
		return fmt.Errorf("filestore: put %q: %w", key, err)
	}
	return nil
}

func (s *Store) put(ctx context.Context, path string, r io.Reader, size int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := s.createTemp(dir)
	if err != nil {
		return err
	}
	tmp := f.Name()
	if err := writeSync(ctx, f, r, size); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := ctx.Err(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		if errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.ENOTEMPTY) {
			return fmt.Errorf("%s is a directory (a key cannot be another key's directory): %w", path, ErrInvalidKey)
		}
		return err
	}
	return syncDir(dir)
}

// createTemp makes a temporary file in dir, creating dir as needed. It
// retries when a concurrent Delete prunes dir in between.
func (s *Store) createTemp(dir string) (*os.File, error) {
	var err error
	for i := 0; i < putAttempts; i++ {
		err = s.ensureDir(dir)
		if err == nil {
			var f *os.File
			if f, err = os.CreateTemp(dir, tmpPrefix+"*"); err == nil {
				return f, nil
			}
		}
		if !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	if errors.Is(err, syscall.ENOTDIR) {
		return nil, fmt.Errorf("%w (a key cannot be another key's directory): %w", err, ErrInvalidKey)
	}
	return nil, err
}

// copyBufs holds the buffers writeSync copies through.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// writeSync copies exactly size bytes from r into f, fsyncs and closes f.
func writeSync(ctx context.Context, f *os.File, r io.Reader, size int64) error {
	// Blocks are up to 4 MiB: copy in 1 MiB steps rather than io.Copy's
	// 32 KiB (the wrappers hide any WriterTo), a quarter of the syscalls.
	bufp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bufp)
	n, err := io.CopyBuffer(f, io.LimitReader(ctxReader{ctx, r}, size), *bufp)
	if err == nil && n < size {
		err = fmt.Errorf("reader gave %d bytes, want %d: %w", n, size, io.ErrUnexpectedEOF)
	}
	if err == nil {
		var one [1]byte
		if m, _ := io.ReadFull(r, one[:]); m > 0 {
			err = fmt.Errorf("reader has more than %d bytes", size)
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ctxReader stops a long copy when the context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// ensureDir creates dir and missing ancestors below the root, fsyncing
// each new directory's parent so the entry survives a crash.
func (s *Store) ensureDir(dir string) error {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is a file (a key cannot be another key's directory): %w", dir, ErrInvalidKey)
		}
		return nil
	}
	if dir == s.root {
		return fmt.Errorf("root directory %s is gone", s.root)
	}
	parent := filepath.Dir(dir)
	if err := s.ensureDir(parent); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return syncDir(parent)
}

// syncDir fsyncs a directory so renames and creations in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}
