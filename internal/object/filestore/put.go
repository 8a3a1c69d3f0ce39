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
	"unsafe"

	"golang.org/x/sys/unix"

	"shoal/internal/object"
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
	s.files.forget(key) // a kept descriptor holds the replaced file
	return nil
}

func (s *Store) put(ctx context.Context, path string, r io.Reader, size int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	batch := object.SyncBatchOf(ctx)
	if batch != nil && object.FreshKey(ctx) {
		if done, err := s.putPrepared(ctx, path, r, size, batch); done {
			return err
		}
	} else if object.FreshKey(ctx) {
		if exists, err := s.putFresh(ctx, path, r, size); !exists {
			return err
		}
	}
	dir := filepath.Dir(path)
	f, err := s.create(dir, func() (*os.File, error) { return os.CreateTemp(dir, tmpPrefix+"*") })
	if err != nil {
		return err
	}
	tmp := f.Name()
	if err := writeSync(ctx, f, r, size, batch == nil); err != nil {
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
			return errKeyIsDir(path)
		}
		return err
	}
	if batch != nil {
		batch.Later(path, func() error { return syncFile(path) })
		batch.Later(dir, func() error { return syncDir(dir) })
		return nil
	}
	return syncDir(dir)
}

// errKeyIsDir is the error for a Put whose key names a directory.
func errKeyIsDir(path string) error {
	return fmt.Errorf("%s is a directory (a key cannot be another key's directory): %w", path, ErrInvalidKey)
}

// create makes a file in dir with open (a temporary file, or the object
// itself), creating dir if open finds it missing (it rarely is: trying
// first saves a stat per Put). It retries when a concurrent Delete prunes
// dir in between.
func (s *Store) create(dir string, open func() (*os.File, error)) (*os.File, error) {
	var err error
	for i := 1; ; i++ {
		var f *os.File
		if f, err = open(); err == nil {
			return f, nil
		}
		if !errors.Is(err, os.ErrNotExist) || i == putAttempts {
			break
		}
		if err = s.ensureDir(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	if errors.Is(err, syscall.ENOTDIR) {
		return nil, fmt.Errorf("%w (a key cannot be another key's directory): %w", err, ErrInvalidKey)
	}
	return nil, err
}

// Direct I/O. A block of a sequential write is written once and not read
// back soon (the data layer caches what it reads), so copying it into the
// page cache only to write it out at fsync costs a memory copy per byte
// and page-cache churn: on the 2-core test machine that copy was half of a
// mount's CPU in a 1 GiB sequential write. So writeSync writes whole
// aligned pieces with O_DIRECT, from aligned buffers, and only a block's
// unaligned tail through the page cache. Objects put with
// object.WithReadSoon (compaction output: the new blocks of a chunk that
// is being rewritten) are the exception and go through the page cache,
// where the reads that follow find them. A file system that refuses
// O_DIRECT (tmpfs before Linux 6.6, some FUSE or network file systems)
// gets plain writes.
//
// Objects under directMin go through the page cache too: their copy costs
// next to nothing, while an O_DIRECT write is a device write of its own
// that the caller waits for before the fsync even starts, and it splits
// the object in two (its aligned part written directly, its tail at the
// fsync). A 4 KiB block with its checksum header and trailer is such an
// object: written through the page cache, the fsync writes it in one
// request (measured on the 2-core test machine, whose ext4 has no
// journal: create + write + fdatasync of 4128 bytes ~6% faster; an
// fsync(2) of a 4 KiB append through a SQLite mount, p50 0.84 of before
// in interleaved runs).
const (
	// directAlign is the alignment O_DIRECT needs of offsets, lengths and
	// memory: the largest logical block size of common devices.
	directAlign = 4096
	// directMin is the smallest object written with O_DIRECT.
	directMin   = 64 << 10
	copyBufSize = 1 << 20
)

// testHookDirect, if set, is told of each file copyDirect turns O_DIRECT
// on for.
var testHookDirect func(f *os.File)

// copyBufs holds the directAlign-aligned buffers writeSync copies through.
var copyBufs = sync.Pool{New: func() any {
	raw := make([]byte, copyBufSize+directAlign)
	skip := (directAlign - int(uintptr(unsafe.Pointer(&raw[0]))%directAlign)) % directAlign
	b := raw[skip : skip+copyBufSize]
	return &b
}}

// writeSync copies exactly size bytes from r into f, fsyncs (if durable)
// and closes f. An object marked object.WithReadSoon goes through the
// page cache, where its next reads will find it, and so does one whose
// fsync an object.SyncBatch defers (not durable): its pages are written
// out at the batch's sync, with the batch's other files.
func writeSync(ctx context.Context, f *os.File, r io.Reader, size int64, durable bool) error {
	// Blocks are up to 4 MiB: copy in 1 MiB steps rather than io.Copy's
	// 32 KiB (the wrappers hide any WriterTo), a quarter of the syscalls.
	bufp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bufp)
	err := copyDirect(f, io.LimitReader(ctxReader{ctx, r}, size), *bufp, size, durable && !object.ReadSoon(ctx))
	if err == nil {
		err = drained(r, size)
	}
	switch {
	case err == nil && durable:
		err = f.Sync()
	case err == nil:
		// Start writing the pages out now, without waiting, so that the
		// batch's fsync later finds less to do.
		_ = unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// fillSynced copies exactly size bytes from r into f, as writeSync does
// (with O_DIRECT if direct), and fdatasyncs f: its bytes and whatever
// reading them back needs. testHookSynced is told of path. The small
// fresh Puts (fresh.go, spare.go, named.go) write this way.
func fillSynced(ctx context.Context, f *os.File, path string, r io.Reader, size int64, direct bool) error {
	err := fill(ctx, f, r, size, direct)
	if err == nil {
		err = unix.Fdatasync(int(f.Fd()))
		if err == nil && testHookSynced != nil {
			testHookSynced(path)
		}
	}
	return err
}

// fill is fillSynced without the fdatasync.
func fill(ctx context.Context, f *os.File, r io.Reader, size int64, direct bool) error {
	bufp := copyBufs.Get().(*[]byte)
	err := copyDirect(f, io.LimitReader(ctxReader{ctx, r}, size), *bufp, size, direct)
	copyBufs.Put(bufp)
	if err == nil {
		err = drained(r, size)
	}
	if err == nil {
		err = ctx.Err()
	}
	return err
}

// drained fails if r, from which size bytes were read, has more.
func drained(r io.Reader, size int64) error {
	var one [1]byte
	if m, _ := io.ReadFull(r, one[:]); m > 0 {
		return fmt.Errorf("reader has more than %d bytes", size)
	}
	return nil
}

// copyDirect copies size bytes from r to f through buf, with O_DIRECT
// (if direct is set and the object has at least directMin bytes) for
// every full buffer and the aligned part of the last one.
func copyDirect(f *os.File, r io.Reader, buf []byte, size int64, direct bool) error {
	direct = direct && size >= directMin && setDirect(f, true) == nil
	if direct && testHookDirect != nil {
		testHookDirect(f)
	}
	var done int64
	for done < size {
		n, err := io.ReadFull(r, buf[:min(int64(len(buf)), size-done)])
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("reader gave %d bytes, want %d: %w", done+int64(n), size, io.ErrUnexpectedEOF)
			}
			return err
		}
		p := buf[:n]
		if direct {
			aligned := n / directAlign * directAlign
			if _, err := f.Write(p[:aligned]); err != nil {
				return err
			}
			p = p[aligned:]
			if len(p) > 0 { // the unaligned tail: through the page cache
				if err := setDirect(f, false); err != nil {
					return err
				}
				direct = false
			}
		}
		if len(p) > 0 {
			if _, err := f.Write(p); err != nil {
				return err
			}
		}
		done += int64(n)
	}
	return nil
}

// setDirect turns O_DIRECT on or off for f.
func setDirect(f *os.File, on bool) error {
	fd := int(f.Fd())
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return err
	}
	if on {
		flags |= unix.O_DIRECT
	} else {
		flags &^= unix.O_DIRECT
	}
	_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags)
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

// testHookEnsureDir, if set, is told of each ensureDir call.
var testHookEnsureDir func(dir string)

// ensureDir creates dir and missing ancestors below the root, fsyncing
// each new directory's parent so the entry survives a crash.
func (s *Store) ensureDir(dir string) error {
	if testHookEnsureDir != nil {
		testHookEnsureDir(dir)
	}
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

// syncFile fsyncs the file at path (an object an object.SyncBatch left
// to sync).
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return nil
}

// openNoPoll opens a regular file as os.OpenFile does, without the poller
// registration os.OpenFile attempts and that fails for regular files: four
// fcntl and an epoll_ctl saved per Put.
func openNoPoll(path string, flag int, perm uint32) (*os.File, error) {
	for {
		fd, err := unix.Open(path, flag|unix.O_CLOEXEC, perm)
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), path), nil
		case err != unix.EINTR:
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
	}
}

// syncDir fsyncs a directory so renames and creations in it are durable.
// It calls the system directly: os.Open would try (and fail) to add the
// descriptor to the poller, four fcntl and an epoll_ctl more per Put.
func syncDir(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	err = unix.Fsync(fd)
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}
