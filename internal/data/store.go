package data

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"shoal/internal/meta"
	"shoal/internal/object"
)

// ErrCorrupt marks a block whose stored bytes are wrong: the object is
// shorter or longer than its key says, or (through object.WithChecksum) its
// checksum does not match. It is object.ErrCorrupt itself, so one errors.Is
// test covers both layers. Reads that meet one fail with an error wrapping
// ErrCorrupt; they never return the wrong bytes.
var ErrCorrupt = object.ErrCorrupt

// errClosed is returned by a Writer used after Close.
var errClosed = errors.New("data: writer closed")

// errStoreClosed fails work started after Store.Close.
var errStoreClosed = errors.New("data: store closed")

// Defaults for the zero fields of Config.
const (
	DefaultBlockSize  = meta.MaxBlockSize
	DefaultBufferSize = 256 << 20
	DefaultCacheSize  = 256 << 20
	DefaultReadAhead  = 16
	DefaultUploads    = 32
	DefaultIdleCommit = 3 * time.Second
)

// Config tunes a Store. Zero fields take the defaults above.
type Config struct {
	// BlockSize is the bytes per block object, a volume format setting:
	// every client of a volume must use the same. At most meta.MaxBlockSize.
	BlockSize int
	// BufferSize bounds the unflushed write bytes across all writers;
	// Write waits for uploads when it is reached.
	BufferSize int64
	// CacheSize bounds the in-memory read cache of blocks. Negative
	// disables caching (concurrent fetches are still shared).
	CacheSize int64
	// ReadAhead is how many blocks a sequential reader prefetches.
	// Negative disables read-ahead.
	ReadAhead int
	// Uploads bounds concurrent block uploads (and, separately, fetches).
	Uploads int
	// IdleCommit is how long a slice may go unwritten before it is
	// committed without waiting for Flush.
	IdleCommit time.Duration
	// Logger receives error reports; nil means slog.Default().
	Logger *slog.Logger
	// NewID, if set, is the engine's NewSliceID: the Store then reserves
	// slice ids ahead and has the object store make their small blocks'
	// names durable before their Puts, where it can (named.go).
	NewID IDFunc
	// GatedCommit says that the CommitFuncs of this Store's Writers
	// await meta.AwaitCommitGate before they commit (kvmeta's
	// WriteSlices does): a small pack's commit may then run beside its
	// Put (gated.go).
	GatedCommit bool
}

func (c Config) withDefaults() Config {
	if c.BlockSize <= 0 || c.BlockSize > meta.MaxBlockSize {
		c.BlockSize = DefaultBlockSize
	}
	if c.BufferSize <= 0 {
		c.BufferSize = DefaultBufferSize
	}
	if c.CacheSize == 0 {
		c.CacheSize = DefaultCacheSize
	}
	if c.ReadAhead == 0 {
		c.ReadAhead = DefaultReadAhead
	}
	if c.ReadAhead < 0 {
		c.ReadAhead = 0
	}
	if c.Uploads <= 0 {
		c.Uploads = DefaultUploads
	}
	if c.IdleCommit <= 0 {
		c.IdleCommit = DefaultIdleCommit
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Store moves file data between writers/readers and an object store. It is
// safe for concurrent use; one Store serves a whole mount.
type Store struct {
	objects object.Store
	cfg     Config
	log     *slog.Logger

	pageSize int
	pages    sync.Pool // *[]byte of pageSize
	buf      budget
	uploads  chan struct{} // upload slots
	fetches  chan struct{} // fetch slots
	cache    *cache
	paints   sharedPaints // paintings of long lists under random reads

	// verifyAfter is the age of stored blocks past which a slice's blocks
	// are checked before its commit (see Writer.verify); half gc's
	// default grace.
	verifyAfter time.Duration

	ctx     context.Context // lives until Close; uploads and fetches run under it
	cancel  context.CancelFunc
	wg      sync.WaitGroup // background goroutines, see spawn
	closeMu sync.RWMutex   // orders spawn's wg.Add before Close's wg.Wait
	closed  bool

	regMu   sync.Mutex
	writers map[*Writer]struct{}

	stopSpares func()    // see keepSpares
	named      namedPool // see named.go

	counters counters
}

// New returns a Store over objects. Config zero fields take defaults; a
// BlockSize above meta.MaxBlockSize is replaced by the default and logged.
func New(objects object.Store, cfg Config) *Store {
	if cfg.BlockSize > meta.MaxBlockSize {
		cfg.withDefaults().Logger.Error("data: block size too large, using default",
			"block_size", cfg.BlockSize, "max", meta.MaxBlockSize)
	}
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Store{
		objects:     objects,
		cfg:         cfg,
		log:         cfg.Logger,
		pageSize:    min(pageSize, cfg.BlockSize),
		uploads:     make(chan struct{}, cfg.Uploads),
		fetches:     make(chan struct{}, cfg.Uploads),
		cache:       newCache(cfg.CacheSize),
		verifyAfter: 30 * time.Minute,
		ctx:         ctx,
		cancel:      cancel,
		writers:     map[*Writer]struct{}{},
	}
	s.buf.init(cfg.BufferSize)
	s.stopSpares = keepSpares(objects)
	s.named.p, s.named.newID = findPreparer(objects), cfg.NewID
	return s
}

// spareKeeper is a store that can keep spare files ready, so that a small
// block's Put skips creating a file (filestore.Store.KeepSpares). Blocks
// are put with object.WithFreshKey, which the spares serve.
type spareKeeper interface {
	KeepSpares() (stop func())
}

// keepSpares asks the store under objects' wrappers to keep spares, and
// returns what stops it (a no-op for stores without them).
func keepSpares(objects object.Store) func() {
	if k, ok := object.Find[spareKeeper](objects); ok {
		return k.KeepSpares()
	}
	return func() {}
}

// Close stops background uploads and fetches and waits for them. Data of
// writers not yet flushed is abandoned: close writers first.
func (s *Store) Close() error {
	s.closeMu.Lock()
	s.closed = true
	s.closeMu.Unlock()
	s.cancel()
	s.regMu.Lock()
	ws := make([]*Writer, 0, len(s.writers))
	for w := range s.writers {
		ws = append(ws, w)
	}
	s.regMu.Unlock()
	for _, w := range ws {
		w.stopTimer()
	}
	s.wg.Wait()
	s.stopNamed()
	s.stopSpares()
	return nil
}

// BlockSize returns the bytes per block object this Store writes.
func (s *Store) BlockSize() int { return s.cfg.BlockSize }

// BlockLen returns the size of block index of a slice of size bytes.
func BlockLen(blockSize int, size uint32, index int) int {
	return min(blockSize, int(size)-index*blockSize)
}

// BlockCount returns how many blocks a slice of size bytes has.
func BlockCount(blockSize int, size uint32) int {
	return (int(size) + blockSize - 1) / blockSize
}

// register and unregister track live writers, for buffer pressure.
func (s *Store) register(w *Writer) {
	s.regMu.Lock()
	s.writers[w] = struct{}{}
	s.regMu.Unlock()
}

func (s *Store) unregister(w *Writer) {
	s.regMu.Lock()
	delete(s.writers, w)
	s.regMu.Unlock()
}

// freezeAllWriters asks every writer to stop extending its open slices so
// their partial blocks upload and free buffer space.
func (s *Store) freezeAllWriters() {
	s.regMu.Lock()
	ws := make([]*Writer, 0, len(s.writers))
	for w := range s.writers {
		ws = append(ws, w)
	}
	s.regMu.Unlock()
	for _, w := range ws {
		w.freezeOpen()
	}
}
