package filestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/object"
)

// Prepared names: small fresh Puts that only write and fdatasync.
//
// A small fresh Put over a spare (spare.go) still pays for the spare's
// name: the rename to the key and the directory's fsync, a device cache
// flush of its own beside the file's fdatasync. Measured on the 2-core
// test machine (ext4 without a journal), write + fdatasync of 4128 bytes
// into a file whose name and inode were already durable took 0.27-0.41
// ms at the median against 0.45-0.65 ms over a spare with its rename and
// directory fsync (prepared file empty with its blocks fallocated
// 0.33-0.41; without them 0.35-0.50).
//
// A caller that knows the keys of its coming Puts (the data layer: block
// 0 of slice ids it reserved from the engine) asks Prepare to make them
// ahead: each key gets an empty file, its blocks allocated beyond its end
// (fallocate with KEEP_SIZE, where the file system can: as many bytes as
// the latest Put into a key prepared with the same size hint took, the
// caller's hint being its size before the wrappers above add theirs, so
// that keys of several sizes prepared side by side each get their own),
// the file fsynced and then its directory, so that name, inode and
// allocation are durable before any Put. A fresh Put of a prepared key
// then:
//
//  1. opens the file and writes the bytes (the size grows from 0);
//  2. fdatasyncs it: the bytes and what reading them needs (the size,
//     the extents written) — the name is durable already;
//  3. checks that the file still has its name (a link count above 0):
//     an object removed under the Put (gc run with a grace shorter than
//     namedMaxAge) fails it rather than leave a block that only an open
//     descriptor holds.
//
// Durability: when Put returns, bytes, size and name are on stable
// storage, exactly as after an in-place fresh Put, and the engine commit
// that names the block comes after. A crash before that leaves the empty
// file or a part of the bytes under a key nothing references.
//
// Prepared objects are real keys: List shows them, and to gc and fsck
// they are leaked objects (unreferenced), which gc collects once they are
// older than its grace. An object a Put has not taken within
// namedMaxAge is not used: the Put removes it and creates the object as
// usual. So a prepared object older than namedMaxAge is garbage, and gc's
// rule (a writer holds no object uncommitted for longer than the grace)
// holds for any grace above namedMaxAge. Their size tells them apart
// from every object a Put wrote: empty, where a block never is. Unprepare
// removes the ones a caller gives up (a stopping mount's); a killed
// process leaves them to gc.
const namedMaxAge = 2 * time.Minute

// namedSet is a Store's prepared objects, by path.
type namedSet struct {
	mu    sync.Mutex
	paths map[string]preparedObject
	sizes map[int64]int64 // by size hint: the size of the latest Put into an object prepared with it
}

// preparedObject is when an object was prepared and the size hint it
// was prepared with.
type preparedObject struct {
	made time.Time
	hint int64
}

// testHookNamedUsed, if set, is told of each Put that took a prepared
// object, once it is durable.
var testHookNamedUsed func(path string)

// take removes path from the set and reports when it was made, if it
// was prepared; it records size as the latest Put's for the object's
// hint.
func (n *namedSet) take(path string, size int64) (time.Time, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	o, ok := n.paths[path]
	delete(n.paths, path)
	if ok && o.hint > 0 && size > 0 {
		if n.sizes == nil {
			n.sizes = map[int64]int64{}
		}
		n.sizes[o.hint] = size
	}
	return o.made, ok
}

// allocation returns how many bytes to allocate for an object prepared
// with hint: the size of the latest Put into one prepared with the same
// hint (the caller's size plus what the wrappers above add, a checksum
// header say), or the hint itself before there was one.
func (n *namedSet) allocation(hint int64) int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	if size, ok := n.sizes[hint]; ok {
		return size
	}
	return hint
}

// Prepare makes an empty, durable object under each key for a fresh Put
// to write into (see above) and returns the keys it prepared; a key
// whose object exists or cannot be made is left out. sizeHint is the
// size of the Puts the caller expects, as it will give them (0: not
// known); the space allocated is the size of the latest Put into an
// object prepared with the same hint, or the hint before there was one.
func (s *Store) Prepare(ctx context.Context, keys []string, sizeHint int64) []string {
	size := s.named.allocation(sizeHint)
	var made []string
	var files []*os.File
	dirs := map[string]bool{}
	for _, key := range keys {
		if ctx.Err() != nil || checkKey(key) != nil {
			break
		}
		path := s.path(key)
		dir := filepath.Dir(path)
		f, err := s.create(dir, func() (*os.File, error) {
			return openNoPoll(path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
		})
		if err != nil {
			continue
		}
		if size > 0 {
			_ = unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, size)
		}
		files = append(files, f)
		made = append(made, key)
		dirs[dir] = true
	}
	files, made = syncAll(files, made)
	for dir := range dirs {
		err := syncDir(dir)
		if err == nil && testHookSynced != nil {
			testHookSynced(dir)
		}
		if err != nil {
			// Names not known durable: no Put may rely on them.
			for i := range files {
				files[i].Close()
				os.Remove(files[i].Name())
			}
			return nil
		}
	}
	now := time.Now()
	s.named.mu.Lock()
	if s.named.paths == nil {
		s.named.paths = map[string]preparedObject{}
	}
	for _, f := range files {
		f.Close()
		s.named.paths[f.Name()] = preparedObject{made: now, hint: sizeHint}
	}
	s.named.mu.Unlock()
	return made
}

// syncAll fsyncs files, all at once: the file system and the device
// merge what concurrent syncs share (an inode table block, the cache
// flush), so a refill costs the Puts beside it a few flushes rather than
// one per file. It returns the files that synced and their keys, and
// closes and removes the others.
func syncAll(files []*os.File, keys []string) ([]*os.File, []string) {
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f.Sync()
			if errs[i] == nil && testHookSynced != nil {
				testHookSynced(f.Name())
			}
		}()
	}
	wg.Wait()
	okFiles, okKeys := files[:0], keys[:0]
	for i, f := range files {
		if errs[i] != nil {
			f.Close()
			os.Remove(f.Name())
			continue
		}
		okFiles, okKeys = append(okFiles, f), append(okKeys, keys[i])
	}
	return okFiles, okKeys
}

// Unprepare removes the prepared objects of keys that no Put took.
func (s *Store) Unprepare(keys []string) {
	for _, key := range keys {
		if checkKey(key) != nil {
			continue
		}
		path := s.path(key)
		if _, ok := s.named.take(path, 0); ok {
			os.Remove(path)
		}
	}
}

// putPrepared puts into path's prepared file: it reports done unless path
// was not prepared, is too old to use or is gone, in which case the
// caller puts it otherwise. With a batch (object.WithSyncBatch), the
// batch's Sync makes it durable.
//
// The data layer's commit that runs beside a small Put (data/gated.go)
// puts this way: the Put writes the bytes and starts their write-out
// (sync_file_range), the commit's transaction does its work meanwhile,
// on the same goroutine, and the batch's Sync (the fdatasync, then the
// link check) runs just before the COMMIT. Until then nothing refers to
// the key, so the object being incomplete meanwhile is never seen.
func (s *Store) putPrepared(ctx context.Context, path string, r io.Reader, size int64, batch *object.SyncBatch) (done bool, err error) {
	made, ok := s.named.take(path, size)
	if !ok {
		return false, nil
	}
	if time.Since(made) >= namedMaxAge {
		os.Remove(path) // too old to use: made anew by the caller
		return false, nil
	}
	gone, err := s.putNamed(ctx, path, r, size, batch)
	return !gone, err
}

// putNamed writes a fresh key's object into its prepared file (see
// above). It reports gone, having read nothing from r, if the file is
// no longer there. With a batch, it leaves the fdatasync and what
// follows it to the batch's Sync (putPrepared).
func (s *Store) putNamed(ctx context.Context, path string, r io.Reader, size int64, batch *object.SyncBatch) (gone bool, err error) {
	f, err := openNoPoll(path, unix.O_WRONLY, 0)
	if err != nil {
		return errors.Is(err, os.ErrNotExist), err
	}
	if batch == nil {
		err = fillSynced(ctx, f, path, r, size, !object.ReadSoon(ctx))
		return false, finishNamed(f, path, err)
	}
	if err = fill(ctx, f, r, size, !object.ReadSoon(ctx)); err != nil {
		return false, finishNamed(f, path, err)
	}
	// Start the write-out now: the Sync then mostly waits for the
	// device's cache flush, not for the bytes' transfer too.
	_ = unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
	batch.Later(path, func() error {
		err := unix.Fdatasync(int(f.Fd()))
		if err == nil && testHookSynced != nil {
			testHookSynced(path)
		}
		return finishNamed(f, path, err)
	})
	return false, nil
}

// finishNamed ends a Put into a prepared file whose write and fdatasync
// returned err: it checks that the file still has its name (a link
// count above 0; an object removed under the Put, by gc run with a
// grace shorter than namedMaxAge, fails it rather than leave a block
// that only an open descriptor held) and closes it. A failed Put's file
// is removed.
func finishNamed(f *os.File, path string, err error) error {
	if err == nil {
		var st unix.Stat_t
		if err = unix.Fstat(int(f.Fd()), &st); err == nil && st.Nlink == 0 {
			err = fmt.Errorf("%s was removed while it was written (gc with a grace under %v?)", path, namedMaxAge)
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return err
	}
	if testHookNamedUsed != nil {
		testHookNamedUsed(path)
	}
	return nil
}
