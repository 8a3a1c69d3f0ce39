package sqlkv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/mattn/go-sqlite3"
	"golang.org/x/sys/unix"
)

// WAL space written ahead.
//
// A commit appends its frames to the WAL, and Sync (an fsync(2) on the
// mount) then fdatasyncs the file. While the WAL grows, each of those
// fdatasyncs must also write the inode (the new size, the new extents)
// besides the frames; once it stops growing (SQLite starts over at its
// beginning after a checkpoint, overwriting old frames in place) only the
// frames go out. The WAL starts empty at every mount (SQLite deletes it
// when its last connection closes) and grows whenever a checkpoint cannot
// start it over, so a mount that fsyncs small changes spends much of its
// time in the growing case. Measured on the 2-core test machine, 4 KiB
// written and fdatasynced in place: 53–82 µs at the median into blocks
// written before, 107–144 µs appended, 92–103 µs into fallocated blocks
// (which the sync must also mark written). With this, 4 KiB appended and
// fsynced through a mount on a fresh volume (corebench fsync, six rounds
// of 300 interleaved with the build before and the local disk): 0.458 ms
// at the median against 0.541 ms (0.85 of before), 3.43 times the local
// disk's 0.133 ms against 4.06 times; the session's final build against
// its first, again: 0.90.
//
// So the checkpointer keeps walAhead bytes of written zeros past the
// WAL's last frame, as PostgreSQL zero-fills its WAL segments before use:
// when the database opens (before Open returns) and after each background
// checkpoint, it writes zeros past the file's end, walAheadStep bytes at
// a time, then fdatasyncs them (size and extents durable before any
// commit relies on them). Each step runs
// while the checkpointer's connection holds the write lock (BEGIN
// IMMEDIATE, then ROLLBACK, which commits nothing): no commit is appending
// meanwhile, so the WAL index header's last frame is where the frames end
// and nothing past the file's end is being written. SQLite reads zeros
// there as the end of the log: recovery stops at the first frame whose
// salt and checksum do not match, which zeros never do.
//
// The cost: up to walAhead more bytes of WAL on disk (and mapped,
// resident.go), and a writer that meets a step (walAheadStep bytes
// written to the page cache, a few per checkpoint while the WAL grows)
// waits in SQLite's busy handler, a millisecond or more: the A/B above
// saw no change of the p99 (4.32 against 4.34 ms). A checkpointer that
// still finds the write lock busy after the connection's busy timeout
// (one second) gives up the round; the next checkpoint tries again.
const (
	walAhead     = 4 << 20   // bytes of zeros kept past the last frame
	walAheadStep = 256 << 10 // bytes written per hold of the write lock
	walFileHdr   = 32        // the WAL file's header
	walFrameHdr  = 24        // each frame's header, before its page
)

var walZeros [walAheadStep]byte

// extendWAL keeps walAhead bytes of written zeros past the WAL's last
// frame (see above). A busy write lock ends it early without an error.
func (c *checkpointer) extendWAL() error {
	wrote := false
	for {
		n, err := c.extendStep()
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		wrote = true
	}
	if !wrote {
		return nil
	}
	f, err := os.OpenFile(c.walPath, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = unix.Fdatasync(int(f.Fd()))
	return errors.Join(err, f.Close())
}

// extendStep writes up to walAheadStep zeros past the WAL's end while
// holding the write lock, and returns how many it wrote: 0 once the room
// past the last frame is walAhead, or when the lock is busy or the WAL
// index cannot be read.
func (c *checkpointer) extendStep() (int, error) {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	if _, err := c.conn.Exec("BEGIN IMMEDIATE", nil); err != nil {
		if se := (sqlite3.Error{}); errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked) {
			return 0, nil
		}
		return 0, err
	}
	n, err := c.writeAhead()
	// The write lock must not outlive the step: every writer would wait
	// for it. A failed ROLLBACK is tried again while the transaction is
	// open.
	for i := 0; i < 3 && !c.conn.AutoCommit(); i++ {
		if _, rerr := c.conn.Exec("ROLLBACK", nil); rerr != nil && i == 2 {
			err = errors.Join(err, rerr)
		}
	}
	return n, err
}

// writeAhead is extendStep's work under the write lock.
func (c *checkpointer) writeAhead() (int, error) {
	end, ok, err := c.walEnd()
	if err != nil || !ok {
		return 0, err
	}
	f, err := os.OpenFile(c.walPath, os.O_WRONLY, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	if size < end || size >= end+walAhead {
		return 0, nil // size < end: not the WAL the index describes
	}
	n := min(end+walAhead-size, walAheadStep)
	if _, err := f.WriteAt(walZeros[:n], size); err != nil {
		return 0, fmt.Errorf("write ahead in %s: %w", c.walPath, err)
	}
	return int(n), nil
}

// walEnd returns where the WAL's last frame ends, from the WAL index
// header in the -shm file (c.shm); ok is false if the header is not
// readable as one whole (both copies alike) or not initialised.
func (c *checkpointer) walEnd() (int64, bool, error) {
	if c.shm == nil {
		return 0, false, nil
	}
	var h [2 * walHeaderSize]byte
	if n, _ := c.shm.ReadAt(h[:], 0); n < len(h) {
		return 0, false, nil
	}
	if string(h[:walHeaderSize]) != string(h[walHeaderSize:]) ||
		binary.NativeEndian.Uint32(h[0:]) != walIndexVersion || h[12] != 1 {
		return 0, false, nil
	}
	frames := int64(binary.NativeEndian.Uint32(h[16:]))
	if frames == 0 {
		return 0, true, nil // the first commit writes the header too
	}
	page := int64(binary.NativeEndian.Uint16(h[14:]))
	if page == 1 {
		page = 1 << 16 // stored as 1: it does not fit 16 bits
	}
	if page < 512 {
		return 0, false, nil
	}
	return walFileHdr + frames*(page+walFrameHdr), true, nil
}
