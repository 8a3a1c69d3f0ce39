package vfs

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"shoal/internal/data"
	"shoal/internal/journal"
	"shoal/internal/meta"
)

// Config tunes an FS.
type Config struct {
	// CompactThreshold is the slice count of a chunk past which it is
	// compacted in the background. 0 means 32.
	CompactThreshold int
	// DeleteDelay is how long a freed slice waits before its objects are
	// deleted. 0 means 30 s.
	DeleteDelay time.Duration
	// CleanInterval is how often freed slices are looked for. 0 means 2 s.
	CleanInterval time.Duration
	// MayDelete, if set, is asked before each batch of deletes of freed
	// slices' objects; an error holds the batch (the slices stay freed and
	// are retried later). volume.Open sets it to refuse while the bucket
	// is shared with another volume (internal/identity).
	MayDelete func(ctx context.Context) error
	// FlushTimeout bounds how long close(2), fsync(2) and the flushes
	// before truncate and unmount wait for the object store and engine;
	// past it they fail with EIO and the data stays buffered for the
	// next flush. 0 means 2 minutes.
	FlushTimeout time.Duration
	// Strict turns off page caching across opens: every open(2) drops
	// the kernel's cached pages of the file.
	Strict bool
	// Logger receives operational logs; nil means slog.Default().
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.CompactThreshold <= 0 {
		c.CompactThreshold = 32
	}
	if c.DeleteDelay <= 0 {
		c.DeleteDelay = 30 * time.Second
	}
	if c.FlushTimeout <= 0 {
		c.FlushTimeout = 2 * time.Minute
	}
	if c.CleanInterval <= 0 {
		c.CleanInterval = 2 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Fh identifies an open file or directory handle.
type Fh uint64

// FS is a mounted volume's file system. All methods are safe for
// concurrent use.
type FS struct {
	engine meta.Engine
	data   *data.Store
	cfg    Config
	// tracker is the engine as a meta.OpenTracker, or nil: opens are
	// then this mount's business only.
	tracker meta.OpenTracker
	log     *slog.Logger
	// settling counts salvaged writes still being committed in the
	// background (takeover.go); Sync waits for them.
	settling sync.WaitGroup
	// changes counts the operations that may have told the kernel
	// something newer of an inode or a name (Changed); a readdirplus page
	// read before the last of them is not reused (dir.go).
	changes atomic.Uint64
	// listChanges counts the changes of cached slice lists (a commit,
	// forgetChunks) of any file: a list an open read may be installed
	// only if none happened since just before that read (refreshKnown).
	listChanges atomic.Uint64
	// listings answers the lookups that follow a listing (listing.go).
	listings listingCache

	mu      sync.Mutex
	files   map[meta.Ino]*file // inodes with open handles
	closing map[*file]struct{} // files whose last handle is being released
	handles map[Fh]*handle
	dirs    map[Fh]*dirStream
	nextFh  Fh
	stamps  map[meta.Ino]stamp // (mtime, length) when the page cache was filled

	fence      fence // this mount's lease on its locks (fence.go)
	compactor  *compactor
	cleaner    *cleaner
	stop       context.CancelFunc
	endSession func() // set by BeginSession
	session    meta.SessionID
	resumeLost bool // BeginSession could not resume SessionConfig.Resume
	wg         sync.WaitGroup

	// journal, if set, records the handles and the acknowledged writes
	// for a successor process (takeover.go).
	journal *journal.Journal
	jlogged sync.Once
}

// New returns an FS over engine and store and starts its background work
// (compaction, deletion of freed objects). Close stops it.
func New(engine meta.Engine, store *data.Store, cfg Config) *FS {
	cfg.setDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	fs := &FS{
		engine:  engine,
		data:    store,
		cfg:     cfg,
		log:     cfg.Logger,
		files:   map[meta.Ino]*file{},
		closing: map[*file]struct{}{},
		handles: map[Fh]*handle{},
		dirs:    map[Fh]*dirStream{},
		stamps:  map[meta.Ino]stamp{},
		stop:    cancel,
	}
	fs.fence.log, fs.fence.locked = fs.log, fs.lockedInodes
	if t, ok := engine.(meta.OpenTracker); ok {
		t.SetOpenCheck(fs.isOpen)
		fs.tracker = t
	}
	fs.compactor = newCompactor(fs)
	fs.cleaner = newCleaner(fs)
	fs.wg.Add(2)
	go func() { defer fs.wg.Done(); fs.compactor.run(ctx) }()
	go func() { defer fs.wg.Done(); fs.cleaner.run(ctx) }()
	return fs
}

// isOpen reports whether this mount holds ino open (meta.OpenTracker).
func (fs *FS) isOpen(ino meta.Ino) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.files[ino] != nil
}

// lockedInodes lists the open files locked through this mount.
func (fs *FS) lockedInodes() []uint64 {
	fs.mu.Lock()
	files := make([]*file, 0, len(fs.files))
	for _, f := range fs.files {
		files = append(files, f)
	}
	fs.mu.Unlock()
	var out []uint64
	for _, f := range files {
		f.mu.Lock()
		if f.lockEpoch != 0 {
			out = append(out, uint64(f.ino))
		}
		f.mu.Unlock()
	}
	return out
}

// Engine returns the metadata engine the FS runs on.
func (fs *FS) Engine() meta.Engine { return fs.engine }

// Sync flushes every open file's buffered writes, after waiting for
// salvaged writes to commit (takeover.go). It is what an unmount calls
// before the kernel lets go of the mount, and what a journal rotation
// calls before it deletes the older segments (journal.Options.Sync):
// every write acknowledged before the call is committed when it returns
// nil. So it also waits for the files whose last handle is being
// released (their close commits what they held) and takes the outcome
// of their close as theirs: a file closed meanwhile has nothing left to
// flush, which is no failure.
func (fs *FS) Sync(ctx context.Context) error {
	fs.settling.Wait()
	fs.mu.Lock()
	files := make([]*file, 0, len(fs.files)+len(fs.closing))
	for _, f := range fs.files {
		files = append(files, f)
	}
	for f := range fs.closing {
		files = append(files, f)
	}
	fs.mu.Unlock()
	var first error
	for _, f := range files {
		if err := f.flush(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Close flushes all buffered writes, stops background work and closes
// every open handle. The engine and store are the caller's to close.
func (fs *FS) Close(ctx context.Context) error {
	err := fs.Sync(ctx)
	fs.stop()
	if fs.endSession != nil {
		fs.endSession()
	}
	fs.wg.Wait()
	fs.mu.Lock()
	files := fs.files
	fs.files = map[meta.Ino]*file{}
	fs.handles = map[Fh]*handle{}
	fs.mu.Unlock()
	for _, f := range files {
		if cerr := f.close(ctx); cerr != nil && err == nil {
			err = cerr
		}
		if f.orphan {
			if perr := fs.engine.Purge(ctx, f.ino); perr != nil && err == nil {
				err = perr
			}
		}
	}
	return err
}
