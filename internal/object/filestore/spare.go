package filestore

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Spare files for small fresh Puts.
//
// Creating a file is much of what a small fresh Put costs on a local
// disk: the create and the first write allocate an inode and blocks, and
// the fdatasync must write the bitmaps, the inode and (ext4 without a
// journal) the parent directory, each a write waited for, before its
// cache flush.
//
// So a Store that a mount asked to KeepSpares keeps spare files ready in
// the directory its small fresh Puts go to: temporary files (tmpPrefix,
// so List never shows them and RemoveStaleTemp collects what a killed
// process leaves) written with zeros to the size of the latest such Put
// by a background refill, which has them written out (sync_file_range:
// blocks allocated and data on the device) but syncs nothing: no cache
// flush of its own competes with the Puts' flushes, and nothing about a
// spare needs to be durable. A small fresh Put then
//
//  1. writes its bytes over a spare (and truncates it, should the spare
//     be longer);
//  2. fdatasyncs it: its bytes and whatever reading them back needs
//     (size, allocation, the inode if still unwritten), as for any file —
//     but with no allocation left to do;
//  3. beside steps 1 and 2, on a goroutine started before them, renames
//     the spare to the key with RENAME_NOREPLACE and fsyncs the
//     directory, for the new name.
//
// Step 3 starts first because the two branches overlap only if another
// thread picks the goroutine up while this one is in its syscalls:
// started after the write, it sat in the run queue until the fdatasync
// had returned, on the loaded 2-core test machine most of the time
// (strace: the rename began after the fdatasync ended), and the Put
// paid for both branches one after the other. Started before, it has
// the write's time to be picked up. Renaming before the bytes are
// written changes nothing for a crash: until Put returns, the object
// under the key is unreferenced whatever it holds.
//
// Durability rests on steps 2 and 3 alone, exactly as for an in-place
// fresh Put (fresh.go): fdatasync for the bytes, the directory's fsync
// for the name. Put returns once both are done, and the engine commit
// that names the block follows Put: a crash can never leave a committed
// slice whose block is missing, short or still the spare's zeros. A crash
// before Put returns leaves at worst an unreferenced object under the key
// (a spare's zeros, or a part of the bytes), as an in-place fresh Put may:
// gc collects it, and the block checksum would reject it anyway. The
// rename never replaces an object: should the key exist after all, the
// spare (fsynced whole first) replaces it as a temporary file of the
// ordinary path does, atomically. A file system without RENAME_NOREPLACE
// takes that order for every Put and stops keeping spares.
//
// The pool serves one directory at a time, the one the latest small
// fresh Puts went to (block keys of consecutive slice ids share one), and
// only once two Puts in a row went there, so a single Put makes no
// spares. Spares older than spareMaxAge are removed rather than used, so
// that RemoveStaleTemp with an age above it never takes one in use. The
// stop function KeepSpares returns removes the pool's spares and waits
// for a refill in progress.
//
// Only Puts up to spareMax take spares: for those the file's metadata is
// most of the cost, and the zeros written twice are few. Larger objects
// are written in place as before. Refills come in batches (spareCount -
// spareLow files) so that their writes disturb few Puts.
//
// Measured on the 2-core test machine (ext4 without a journal), an
// fsync(2) of a 4 KiB append through a SQLite mount, p50, interleaved
// with the in-place build: 0.80–0.97 of it (five runs, order swapped).
// Refills that fdatasynced each spare were 0.91–1.10: their flushes cost
// the Puts what the allocation saved.
const (
	spareCount  = 64       // spares kept ready
	spareLow    = 32       // a refill starts when fewer remain
	spareMax    = 16 << 10 // largest Put that takes a spare
	spareMaxAge = 10 * time.Minute
)

// spare is one ready spare file. The pool keeps names, not open files:
// a mount's descriptors stay few.
type spare struct {
	path string
	size int64 // bytes written (zeros)
	made time.Time
}

// sparePool is a Store's set of spares.
type sparePool struct {
	mu        sync.Mutex
	users     int    // KeepSpares callers not stopped
	on        bool   // keeping spares: users > 0 and not broken
	broken    bool   // no RENAME_NOREPLACE here
	dir       string // the directory the spares are in
	free      []*spare
	lastDir   string // of the latest small fresh Put
	refilling bool
	done      sync.WaitGroup
}

// testHookSpareUsed, if set, is told of each Put that took a spare.
var testHookSpareUsed func(path string)

// testHookNaming, if set, is told of each spare about to be renamed to
// its key, before the rename.
var testHookNaming func(path string)

// KeepSpares makes the store keep spare files for small fresh Puts (see
// above) until stop is called. The data layer calls it for a mount.
// Several callers may ask at once; the spares go when the last stops.
func (s *Store) KeepSpares() (stop func()) {
	p := &s.spares
	p.mu.Lock()
	p.users++
	p.on = !p.broken
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			p.users--
			var old []*spare
			if p.users == 0 {
				p.on = false
				old, p.free = p.free, nil
			}
			p.mu.Unlock()
			discard(old)
			p.done.Wait()
		})
	}
}

// take returns a spare in dir for a Put of size bytes, or nil, and starts
// a refill when the pool runs low or should move to dir.
func (p *sparePool) take(dir string, size int64) *spare {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.on || size > spareMax {
		return nil
	}
	again := p.lastDir == dir
	p.lastDir = dir
	var sp *spare
	if p.dir == dir {
		for len(p.free) > 0 && sp == nil {
			sp = p.free[len(p.free)-1]
			p.free = p.free[:len(p.free)-1]
			if time.Since(sp.made) > spareMaxAge {
				discard([]*spare{sp})
				sp = nil
			}
		}
	}
	if !p.refilling && again && (p.dir != dir || len(p.free) < spareLow) {
		p.refilling = true
		p.done.Add(1)
		go p.refill(dir, size)
	}
	return sp
}

// refill tops the pool up with spares of size bytes in dir, first
// removing the spares of another directory.
func (p *sparePool) refill(dir string, size int64) {
	defer p.done.Done()
	p.mu.Lock()
	var old []*spare
	if p.dir != dir {
		old, p.free, p.dir = p.free, nil, dir
	}
	n := spareCount - len(p.free)
	p.mu.Unlock()
	discard(old)
	made := makeSpares(dir, size, n)
	p.mu.Lock()
	if p.on && p.dir == dir {
		p.free = append(made, p.free...) // the older ones are taken first
		made = nil
	}
	p.refilling = false
	p.mu.Unlock()
	discard(made)
}

// makeSpares creates up to n spares of size zero bytes in dir and has
// their blocks allocated and written (no sync: see above).
func makeSpares(dir string, size int64, n int) []*spare {
	zeros := make([]byte, size)
	var made []*spare
	now := time.Now()
	for range n {
		f, err := os.CreateTemp(dir, tmpPrefix+"spare-*")
		if err != nil {
			break
		}
		sp := &spare{path: f.Name(), size: size, made: now}
		_, err = f.Write(zeros)
		if err == nil {
			err = unix.SyncFileRange(int(f.Fd()), 0, 0,
				unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(sp.path)
			break
		}
		made = append(made, sp)
	}
	return made
}

// discard removes spares.
func discard(spares []*spare) {
	for _, sp := range spares {
		os.Remove(sp.path)
	}
}

// putSpare stores a fresh key's object over spare sp, opened as f (see
// above). Should the key have an object after all, sp's bytes replace it
// atomically.
func (s *Store) putSpare(ctx context.Context, sp *spare, f *os.File, path string, r io.Reader, size int64) (err error) {
	tmp, dir := sp.path, filepath.Dir(path)
	named := false
	defer func() {
		f.Close()
		if err != nil {
			os.Remove(tmp)
			if named {
				os.Remove(path)
			}
		}
	}()
	// The name first, on a goroutine of its own: the rename and the
	// directory's fsync run while this one writes and fdatasyncs.
	renamed := make(chan error, 1)
	go func() { renamed <- nameSpare(tmp, path, dir) }()
	if sp.size > size {
		err = f.Truncate(size)
	}
	if err == nil {
		err = fillSynced(ctx, f, path, r, size, false)
	}
	rerr := <-renamed
	named = rerr == nil
	switch {
	case err != nil:
		return err
	case rerr == nil:
		if testHookSpareUsed != nil {
			testHookSpareUsed(path)
		}
		return nil
	case errors.Is(rerr, unix.EEXIST):
		return s.replaceWith(f, tmp, path)
	case errors.Is(rerr, unix.EINVAL) || errors.Is(rerr, unix.ENOSYS) || errors.Is(rerr, unix.EOPNOTSUPP):
		s.spares.mu.Lock()
		s.spares.on, s.spares.broken = false, true
		s.spares.mu.Unlock()
		return s.replaceWith(f, tmp, path)
	case errors.Is(rerr, unix.EISDIR) || errors.Is(rerr, unix.ENOTEMPTY):
		return errKeyIsDir(path)
	}
	return rerr
}

// nameSpare renames spare tmp to path without replacing an object there
// and fsyncs dir, path's directory, for the new name.
func nameSpare(tmp, path, dir string) error {
	if testHookNaming != nil {
		testHookNaming(path)
	}
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_NOREPLACE)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: tmp, New: path, Err: err}
	}
	if err = syncDir(dir); err == nil && testHookSynced != nil {
		testHookSynced(dir)
	}
	return err
}

// replaceWith finishes a Put whose spare could not take the key's name
// without replacing what is there: the ordinary path's last steps, on
// the spare as its temporary file (fsync, rename over the key, fsync of
// the directory).
func (s *Store) replaceWith(f *os.File, tmp, path string) error {
	if err := f.Sync(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.ENOTEMPTY) {
			return errKeyIsDir(path)
		}
		return err
	}
	return syncDir(filepath.Dir(path))
}
