package filestore

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"shoal/internal/object"
)

// In-place Puts of fresh keys (object.WithFreshKey).
//
// A Put normally writes a temporary file, fsyncs it, renames it over the
// key and fsyncs the directory, so that readers see the old object or the
// new one, never a part of it. On ext4 that is two journal commits and two
// cache flushes (the create and the write, then the rename), which was most
// of what an fsync(2) of a 4 KiB change through a mount cost: 0.9 ms of the
// mount's 1.9 ms, against 0.3–0.6 ms for the same fsync on the local disk.
//
// A data block's key is fresh: no object ever had it, and nobody reads it
// before the engine names it, which is after Put returns. Its object is
// therefore created under its own name, written, and made durable by
//
//   - fdatasync of the file: its bytes and the size that reads need;
//   - fsync of its directory, for the new entry: POSIX promises nothing
//     about a new file's name from the file's own fsync. It runs beside the
//     write and the fdatasync, started once the file is created: on a journaling file
//     system both wait for the same journal commit, which holds the create
//     and the write, so the name costs neither a commit nor a cache flush
//     of its own (measured on ext4: create+write+fdatasync 0.48–1.1 ms,
//     with the directory fsync after it 0.69–1.4 ms, beside it 0.5–1.1 ms;
//     the temporary file and rename 0.88–1.5 ms).
//
// Both return before Put does, and the engine commit that names the
// object comes after Put: a crash can never leave a committed slice whose
// block is missing or short. A crash or failure during the Put leaves at
// worst a part of the object under its key, unreferenced: gc collects it
// like any block whose commit never came (fsck counts it as leaked), and
// a failed Put removes it. The file is created with O_EXCL: should the
// key exist after all (the leftover of a failed Put whose removal failed
// too), the Put takes the ordinary path, which replaces it atomically as
// before, rather than write into a file someone might be reading.
//
// A small fresh Put of a store that keeps spares writes over a spare file
// instead of creating one, with the same guarantees (spare.go); a Put of
// a key made ahead with Prepare writes into its file (named.go).
//
// A Put with an object.SyncBatch is not durable on return anyway and keeps
// the ordinary path (its objects are read by others before the batch's
// sync: a backup's copies are atomic), unless its key was made ahead with
// Prepare: that one it writes in place, leaving the fdatasync to the
// batch (named.go, putPrepared).

// testHookSynced, if set, is told of each successful sync of a fresh Put:
// the object's path, and its directory's.
var testHookSynced func(path string)

// putFresh stores a fresh key's object in place (see above). It reports
// exists, having read nothing from r, if the key has an object already.
func (s *Store) putFresh(ctx context.Context, path string, r io.Reader, size int64) (exists bool, err error) {
	if done, err := s.putPrepared(ctx, path, r, size, nil); done {
		return false, err
	}
	dir := filepath.Dir(path)
	if sp := s.spares.take(dir, size); sp != nil {
		if f, err := openNoPoll(sp.path, unix.O_WRONLY, 0); err == nil {
			return false, s.putSpare(ctx, sp, f, path, r, size)
		}
		// The spare is gone (RemoveStaleTemp?): in place, below.
	}
	f, err := s.create(dir, func() (*os.File, error) {
		return openNoPoll(path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
	})
	switch {
	case errors.Is(err, os.ErrExist):
		if fi, serr := os.Lstat(path); serr == nil && fi.IsDir() {
			return false, errKeyIsDir(path)
		}
		return true, nil
	case errors.Is(err, syscall.EISDIR):
		return false, errKeyIsDir(path)
	case err != nil:
		return false, err
	}
	// The directory's fsync starts now, before the write, for the same
	// reason a spare's rename does (spare.go).
	dirSynced := make(chan error, 1)
	go func() {
		err := syncDir(dir)
		if err == nil && testHookSynced != nil {
			testHookSynced(dir)
		}
		dirSynced <- err
	}()
	err = fillSynced(ctx, f, path, r, size, !object.ReadSoon(ctx))
	if derr := <-dirSynced; err == nil {
		err = derr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return false, err
}
