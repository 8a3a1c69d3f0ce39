package kvmeta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// Engine is meta.Engine over a kv.Store. It is safe for concurrent use;
// several Engines (in several processes or machines) may share one store.
type Engine struct {
	opts   Options
	store  kv.Store
	inodes idPool
	slices idPool
	usage  usage
	// session is the meta.SessionID this client works for (0: none).
	session atomic.Uint64
	// report is what the client last asked to publish with its
	// heartbeat (meta.SessionReporter), nil until then.
	report atomic.Pointer[meta.SessionReport]
	// openCheck is the client's open-file check (meta.OpenTracker).
	openCheck atomic.Pointer[func(meta.Ino) bool]
	// opens counts the inodes this client holds open (open.go).
	opens openState

	fmtMu  sync.Mutex
	format *meta.Format // cached by Load and Format
	// capacity and inodeLimit are the cached format's volume limits,
	// read without the lock by every operation's quota check.
	capacity, inodeLimit atomic.Uint64
	// trashDays is the cached Format.TrashDays (trash.go), re-read
	// with the quota list.
	trashDays atomic.Int64

	chunks chunkCache  // decoded slice lists (version 2 volumes)
	txns   txnCounters // transaction counters (txnstats.go)
	// qdirs is the set of directories with a quota (nil: none), see
	// dirquota.go.
	qdirs atomic.Pointer[map[meta.Ino]bool]

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

var _ meta.Engine = (*Engine)(nil)

// SetOpenCheck implements meta.OpenTracker.
func (e *Engine) SetOpenCheck(isOpen func(meta.Ino) bool) { e.openCheck.Store(&isOpen) }

// openChecker returns the registered open-file check, or one that says
// every inode may be open (so unlinked files always become orphans).
func (e *Engine) openChecker() func(meta.Ino) bool {
	if check := e.openCheck.Load(); check != nil && *check != nil {
		return *check
	}
	return func(meta.Ino) bool { return true }
}

// Options tune an Engine. The zero value is the default.
type Options struct {
	// FlushInterval is how often usage counters are written to the store
	// (default one second).
	FlushInterval time.Duration
	// DirMtimeWindow, when set, lets a directory's mtime and ctime lag
	// entry changes by up to this long (JuiceFS's skip-dir-mtime): a
	// create or unlink in a directory whose mtime is younger does not
	// rewrite the directory's attributes. That saves a write per create
	// and, with several clients, the conflicts of all of them writing one
	// directory's record. 0 (the default) updates them every time, as
	// POSIX says.
	DirMtimeWindow time.Duration
	// ClockSkew is a test hook (SHOAL_TEST_CLOCK_SKEW, read by package
	// volume): it shifts this client's local wall clock, as a machine
	// whose clock is off would be. Sessions never compare that clock
	// with another machine's (session.go), so only the informational
	// SessionInfo.Started shows it. Not a user setting.
	ClockSkew time.Duration
}

// New returns an Engine over store. The Engine owns store: Close closes it.
func New(store kv.Store, opts Options) *Engine {
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = time.Second
	}
	e := &Engine{
		opts:   opts,
		store:  store,
		inodes: idPool{key: counterNextInode, batch: inodeBatch, first: uint64(meta.RootIno) + 1},
		slices: idPool{key: counterNextSlice, batch: sliceBatch, first: 1},
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	// What a lookup and a getattr read: a store that can keep them on the
	// client and learn of every change (Redis's invalidations, SQLite's
	// WAL index) answers from there: Redis only the kernel's timed caches
	// (meta.Cached), SQLite, whose answers are current, any point read.
	kv.CacheKeys(store, []byte{kindAttr}, []byte{kindDentry})
	// A slice's reference count is stored only above 1 (refs.go): an
	// unlink of a file with data, whose chunks this client knows, need
	// not read its slices' counts before its commit compares them.
	kv.GuessAbsent(store, []byte{kindRefs})
	go e.flushLoop(opts.FlushInterval)
	return e
}

// Name names the backing store for logs.
func (e *Engine) Name() string { return "kvmeta/" + e.store.Name() }

// Close flushes the usage counters and closes the store.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		close(e.stop)
		<-e.done
		err := errors.Join(e.flushReleases(context.Background()), e.flushUsage(context.Background()))
		e.closeErr = errors.Join(err, e.store.Close())
	})
	return e.closeErr
}

// txn is the state of one read-write (or read-only) operation: the kv
// transaction, the caller, the time the operation happened, the attributes
// read so far (written back at the end when dirty), and the usage deltas to
// publish after the commit. A fresh txn is made for every attempt, so a
// retried transaction starts clean.
type txn struct {
	tx      kv.Tx
	session meta.SessionID
	isOpen  func(meta.Ino) bool // see Engine.SetOpenCheck
	opens   *openState          // this client's opens (open.go)
	// dirWindow is Options.DirMtimeWindow in ns (0: always update).
	dirWindow int64
	cred      meta.Cred
	now       int64
	attrs     map[meta.Ino]*meta.Attr
	flags     map[meta.Ino]byte // attr record flags of the attrs read, when set
	dirty     map[meta.Ino]bool
	space     int64 // bytes of used space added
	files     int64 // inodes added
	held      bool  // space and files are held in flight (quota.go)
	// quotas is the set of quota directories (nil: none, and charges
	// are not recorded); charges are the operation's usage changes.
	quotas  map[meta.Ino]bool
	charges []quotaCharge
	// trash is set on a volume with the trash on, in the operations that
	// may move a file there (Unlink, Rename): see trash.go.
	trash *trashSlot
	// cache is the engine's chunk cache on a volume of format version 2
	// or later, nil before: it also says that new records may go under
	// appended chunk keys (see chunk.go and chunkcache.go).
	cache     *chunkCache
	chunkKeys map[chunkRef][][]byte     // keys of the chunks read, in order
	gens      map[meta.Ino]uint64       // chunk generation of the attrs read
	bumped    map[meta.Ino]bool         // chunks written: the generation goes up one
	dropped   map[meta.Ino]bool         // inodes deleted: their cached chunks go
	wrote     map[chunkRef][]meta.Slice // lists written, for the cache
	readLists map[chunkRef]readList     // lists read, for the cache once committed
	owned     map[chunkRef]bool         // lists of wrote that need no copy
	claims    []claim                   // cached lists appended to in place
	paintings map[chunkRef]*painting    // paintings of lists read or written, when known
	frozenHit bool                      // a frozen inode was changed (frozen.go)
	// prefetched holds entries read ahead (prefetch), by dentry key,
	// until their lookup; nil where absent.
	prefetched map[string][]byte
}

// chunkRef names one chunk of one file.
type chunkRef struct {
	ino   meta.Ino
	index uint32
}

// update runs fn in one read-write kv transaction; dirty attributes are
// written when fn succeeds, and usage deltas are published after commit.
func (e *Engine) update(ctx context.Context, fn func(t *txn) error) error {
	return e.updateIn(ctx, e.store.Txn, fn)
}

// exclusive is update in a transaction during which no other client
// commits a write (kv.Exclusive): snapshots and clones read a whole tree
// in it and see it as it was at one instant.
func (e *Engine) exclusive(ctx context.Context, fn func(t *txn) error) error {
	return e.updateIn(ctx, func(ctx context.Context, fn func(kv.Tx) error) error {
		return kv.Exclusive(ctx, e.store, fn)
	}, fn)
}

// updateIn is update with the kv transaction run by run.
func (e *Engine) updateIn(ctx context.Context, run func(context.Context, func(kv.Tx) error) error, fn func(t *txn) error) error {
	started := time.Now()
	var done *txn
	var attempts []*txn // their chunk cache claims end with the call
	err := run(ctx, func(tx kv.Tx) error {
		t := newTxn(ctx, tx)
		attempts = append(attempts, t)
		t.session = e.currentSession()
		t.isOpen = e.openChecker()
		t.opens = &e.opens
		t.dirWindow = int64(e.opts.DirMtimeWindow)
		e.useChunkCache(t)
		t.quotas = e.quotaDirs()
		if err := fn(t); err != nil {
			return err
		}
		if err := t.checkFrozen(ctx); err != nil {
			return err
		}
		if err := e.checkVolume(t); err != nil {
			return err
		}
		if err := t.applyDirQuotas(); err != nil {
			return err
		}
		t.flush()
		done = t
		return nil
	})
	if err == nil && done != nil {
		e.usage.add(done.space, done.files)
		done.publishChunks()
		done.report(meta.WrittenTo(ctx))
	}
	for _, t := range attempts {
		e.release(t)
		t.releaseClaims()
	}
	e.txns.update(time.Since(started), len(attempts), err)
	if err == nil {
		e.flushEarly(ctx)
	}
	return err
}

// view runs fn in one read-only kv transaction.
func (e *Engine) view(ctx context.Context, fn func(t *txn) error) error {
	return e.viewIn(ctx, e.store.View, fn)
}

// viewAhead is view for an operation whose reads are known ahead: keys,
// and the key f's From names (kv.ViewAhead: one request on PostgreSQL).
func (e *Engine) viewAhead(ctx context.Context, f *kv.Follow, keys [][]byte, fn func(t *txn) error) error {
	return e.viewIn(ctx, func(ctx context.Context, fn func(kv.Tx) error) error {
		return kv.ViewAhead(ctx, e.store, f, keys, fn)
	}, fn)
}

// viewIn is view with the read-only kv transaction run by run.
func (e *Engine) viewIn(ctx context.Context, run func(context.Context, func(kv.Tx) error) error, fn func(t *txn) error) error {
	started := time.Now()
	var done *txn
	err := run(ctx, func(tx kv.Tx) error {
		t := newTxn(ctx, tx)
		e.useChunkCache(t)
		done = t
		return fn(t)
	})
	if err == nil && done != nil {
		done.publishReads()
	}
	e.txns.view(time.Since(started))
	return err
}

// useChunkCache turns on appended chunk keys and the chunk cache for a
// volume of format version 2 or later.
func (e *Engine) useChunkCache(t *txn) {
	if f := e.cachedFormat(); f != nil && f.Version >= appendedChunksVersion {
		t.cache = &e.chunks
	}
}

func newTxn(ctx context.Context, tx kv.Tx) *txn {
	return &txn{
		tx:    tx,
		cred:  meta.CredFrom(ctx),
		now:   meta.Now(),
		attrs: make(map[meta.Ino]*meta.Attr, 4),
		flags: make(map[meta.Ino]byte),
		gens:  make(map[meta.Ino]uint64),
		dirty: make(map[meta.Ino]bool, 4),
	}
}

// wrap returns expected outcomes (bare errnos, nil) as they are and wraps
// anything else once with the operation and its ids.
func wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(syscall.Errno); ok {
		return err
	}
	return fmt.Errorf("kvmeta: "+format+": %w", append(args, err)...)
}

// Format writes the volume settings and, on a fresh store, the root
// directory owned by the caller.
func (e *Engine) Format(ctx context.Context, f meta.Format, force bool) error {
	if f.Version == 0 || f.Version > meta.CurrentFormatVersion {
		f.Version = meta.CurrentFormatVersion
	}
	if f.Created.IsZero() {
		f.Created = time.Now().UTC()
	}
	data, err := json.Marshal(f)
	if err != nil {
		return wrap(err, "format")
	}
	err = e.update(ctx, func(t *txn) error {
		old, err := t.tx.Get(formatKey())
		if err != nil {
			return err
		}
		if old != nil && !force {
			return meta.ErrFormatted
		}
		t.tx.Set(formatKey(), data)
		return t.createRoot()
	})
	if err == nil {
		e.setFormat(f)
	}
	return wrap(err, "format %q", f.Name)
}

// createRoot makes the root directory unless it exists.
func (t *txn) createRoot() error {
	raw, err := t.tx.Get(attrKey(meta.RootIno))
	if err != nil || raw != nil {
		return err
	}
	t.put(meta.RootIno, &meta.Attr{
		Type: meta.TypeDir, Mode: 0o755, Uid: t.cred.Uid, Gid: t.cred.Gid,
		Atime: t.now, Mtime: t.now, Ctime: t.now, Nlink: 2, Length: dirLength,
		Parent: meta.RootIno,
	})
	t.files++
	return nil
}

// Load reads the volume settings.
func (e *Engine) Load(ctx context.Context) (meta.Format, error) {
	var f meta.Format
	err := e.view(ctx, func(t *txn) error {
		var err error
		f, err = t.format()
		return err
	})
	if err != nil {
		return meta.Format{}, wrap(err, "reading the volume settings")
	}
	e.setFormat(f)
	if err := e.refreshQuotas(ctx); err != nil {
		return meta.Format{}, err
	}
	return f, nil
}

func (t *txn) format() (meta.Format, error) {
	var f meta.Format
	raw, err := t.tx.Get(formatKey())
	if err != nil {
		return f, err
	}
	if raw == nil {
		return f, meta.ErrNotFormatted
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return f, fmt.Errorf("bad format record: %w", err)
	}
	if f.Version > meta.CurrentFormatVersion {
		return f, fmt.Errorf("%w: volume version %d, binary %d", meta.ErrNewerFormat, f.Version, meta.CurrentFormatVersion)
	}
	return f, nil
}

func (e *Engine) setFormat(f meta.Format) {
	e.fmtMu.Lock()
	defer e.fmtMu.Unlock()
	e.format = &f
	e.capacity.Store(f.Capacity)
	e.inodeLimit.Store(f.Inodes)
	e.trashDays.Store(int64(f.TrashDays))
}

func (e *Engine) cachedFormat() *meta.Format {
	e.fmtMu.Lock()
	defer e.fmtMu.Unlock()
	return e.format
}
