package sqlkv

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/mattn/go-sqlite3"
	"golang.org/x/sys/unix"
)

// WAL upkeep for SQLite, off the writer's path.
//
// By default SQLite checkpoints inside the COMMIT that takes the WAL past
// 1000 pages: that one transaction copies the frames into the database
// file and syncs both files, while every other writer waits for the
// connection. Measured on the 2-core test machine, this cost a create or
// an unlink about 7 µs on average (of 30–45 µs in the engine), paid in
// multi-millisecond stalls. Here the writer checkpoints only as a safety
// net (writerAutoCheckpoint), and a checkpointer goroutine with its own
// connection runs a PASSIVE checkpoint every ckptEvery commits: a WAL
// checkpoint runs beside the writer, which keeps appending frames.
//
// After each background checkpoint the checkpointer also writes zeros
// ahead of the WAL's last frame, so that commits overwrite blocks written
// before rather than grow the file (walahead.go), and maps what the
// database and the WAL grew by, so that both stay in memory (resident.go).
//
// Durability against power loss (kv.Syncer) does not need a checkpoint
// either: with synchronous=NORMAL a commit is complete in the WAL but not
// synced, and an fdatasync of the WAL file makes every frame in it durable
// (the same sync synchronous=FULL does on every commit). Sync therefore
// syncs the WAL file without taking any connection.
const (
	ckptEvery            = 256  // commits between background checkpoints
	writerAutoCheckpoint = 8192 // pages (32 MiB) before a commit checkpoints itself
)

// checkpointer runs background checkpoints and WAL syncs for one database.
type checkpointer struct {
	connMu  sync.Mutex          // one user of conn at a time (tests call extendWAL too)
	conn    *sqlite3.SQLiteConn // its own connection, not query-only
	dbPath  string
	walPath string
	res     *resident // the database and WAL kept mapped (resident.go)
	commits atomic.Uint64
	kick    chan struct{} // buffered 1: a checkpoint is wanted
	stop    chan struct{}
	stopped chan struct{}
	mapped  chan struct{} // closed once the files are first mapped (tests wait for it)

	mu      sync.Mutex
	lastErr error    // of the last background checkpoint, for close
	dirDone bool     // the WAL's directory entry has been synced once
	wal     *os.File // the WAL file, kept open for sync once it exists

	// shm is the -shm file (the WAL index), read by walahead.go. It stays
	// open until every connection of the pool is closed (closeShm):
	// closing any descriptor of a file drops every POSIX lock the process
	// holds on it, and SQLite's connections hold theirs on the -shm (its
	// "dead man switch" among them, which tells another process that
	// closes its last connection that it is not the last user of the
	// database: without it, that process checkpoints and deletes the WAL
	// and the -shm under this one's open connections).
	shm *os.File
}

// newCheckpointer writes the WAL's room ahead (walahead.go) and starts
// the goroutine on conn.
func newCheckpointer(conn *sqlite3.SQLiteConn, dbPath string) *checkpointer {
	c := &checkpointer{
		conn:    conn,
		dbPath:  dbPath,
		walPath: dbPath + "-wal",
		res:     newResident(dbPath, dbPath+"-wal"),
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
		mapped:  make(chan struct{}),
	}
	if f, err := os.Open(dbPath + "-shm"); err == nil {
		c.shm = f
	}
	c.writeAheadOnce()
	go c.run()
	return c
}

// committed counts one committed write transaction and asks for a
// checkpoint every ckptEvery of them.
func (c *checkpointer) committed() {
	if c.commits.Add(1)%ckptEvery != 0 {
		return
	}
	select {
	case c.kick <- struct{}{}:
	default: // one is already pending
	}
}

func (c *checkpointer) run() {
	defer close(c.stopped)
	defer c.res.close()
	c.res.refresh()
	close(c.mapped)
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
		}
		c.connMu.Lock()
		_, err := c.conn.Exec("PRAGMA wal_checkpoint(PASSIVE)", nil)
		c.connMu.Unlock()
		var se sqlite3.Error
		if errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked) {
			err = nil // another process is checkpointing; the next kick retries
		}
		c.mu.Lock()
		c.lastErr = err
		c.mu.Unlock()
		c.writeAheadOnce()
		c.res.refresh()
	}
}

// writeAheadOnce keeps the WAL's room written ahead (walahead.go). It is
// best effort: a failure (a full disk, say) leaves the WAL as it is, and
// commits append as they would without it.
func (c *checkpointer) writeAheadOnce() {
	_ = c.extendWAL()
}

// sync makes every transaction committed so far durable: it syncs the
// WAL file (and, the first time, its directory, since the WAL was created
// by SQLite without a directory sync at synchronous=NORMAL). No WAL file
// means no commits waiting for a sync. The WAL gets an fdatasync, as
// SQLite's own syncs do: it writes the frames and the size that reading
// them needs, and skips the timestamps, so a WAL rewritten in place after
// a checkpoint costs no journal commit on ext4.
//
// The WAL stays open between syncs, which saves an open and a close per
// fsync(2) on the mount. SQLite keeps the file while any
// connection is open, and ours are until close; should it have been
// removed all the same (no links left), sync opens the current one.
func (c *checkpointer) sync() error {
	wal, err := c.walFile()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	err = unix.Fdatasync(int(wal.Fd()))
	runtime.KeepAlive(wal) // walFile may have dropped it meanwhile
	if err != nil {
		return &fs.PathError{Op: "fdatasync", Path: c.walPath, Err: err}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dirDone {
		return nil
	}
	err = syncPath(filepath.Dir(c.walPath))
	c.dirDone = err == nil
	return err
}

// walFile returns the open WAL file, opening it if it is not open yet or
// the one open has been removed.
func (c *checkpointer) walFile() (*os.File, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wal != nil {
		var st unix.Stat_t
		if err := unix.Fstat(int(c.wal.Fd()), &st); err == nil && st.Nlink > 0 {
			return c.wal, nil
		}
		// Not closed here: a sync running beside this one may still
		// use it. Removed WAL files are rare enough to leave to the GC.
		c.wal = nil
	}
	f, err := os.Open(c.walPath)
	if err != nil {
		return nil, err
	}
	c.wal = f
	return f, nil
}

// syncPath fsyncs the file or directory at path.
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// closeFiles closes the -shm file and the descriptors of the mapped files
// (resident.go), once no connection of the pool is open (see shm). Call
// it after close.
func (c *checkpointer) closeFiles() {
	if c.shm != nil {
		_ = c.shm.Close()
		c.shm = nil
	}
	c.res.closeFiles()
}

// close stops the goroutine and closes its connection; it returns the
// error of the last background checkpoint, if it failed. The -shm file
// and the mapped files stay open (closeFiles).
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.stopped
	c.mu.Lock()
	err := c.lastErr
	if c.wal != nil {
		err = errors.Join(err, c.wal.Close())
		c.wal = nil
	}
	c.mu.Unlock()
	return errors.Join(err, c.conn.Close())
}
