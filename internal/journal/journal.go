package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Record kinds.
const (
	kindCheckpoint = 'K' // session, next fh, seq, format: the state that follows replaces all before
	kindSession    = 'S' // session id
	kindOpen       = 'O' // fh, ino, flags, tracked; since format 2 also request, reply bits
	kindRelease    = 'C' // fh
	kindOpenDir    = 'D' // fh, ino
	kindReleaseDir = 'E' // fh
	kindLocked     = 'L' // fh: a lock was taken through it
	kindOwner      = 'P' // fh, ino, owner: owner took a lock on ino through fh
	kindOwnerGone  = 'Q' // ino, owner: the owner's locks on ino were dropped
	kindWrite      = 'W' // seq, ino, off, bytes
	kindAppend     = 'A' // seq, ino, off, request, bytes: an O_APPEND write (format 2)
	kindBarrier    = 'B' // ino, mark: ino's writes before mark are committed
	kindReply      = 'R' // request, bytes written, reply data (format 2)
	kindIntent     = 'I' // request, ino: the request is about to change the volume (format 3)
)

// Format is the version of the journal's records this package writes.
// Format 1 (no version in the checkpoint) had no request ids and no
// replies, format 2 no intents; Recover reads both. A journal of a later
// format is refused (ErrNewerFormat).
const Format = 3

// guardSegment is the segment number of a directory Create makes among
// the segments: binaries of format 1, which know no version, fail to read
// it as a segment and so refuse a journal they would misread (they stop at
// the first record kind they do not know, dropping the writes after it).
const guardSegment = 0

// DefaultSegmentSize is the size past which a new segment starts.
const DefaultSegmentSize = 64 << 20

const headerSize = 9 // length, crc, kind

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// kindCRC is the CRC-32C of each kind byte, where a record's CRC starts.
var kindCRC = func() (t [256]uint32) {
	for k := range t {
		t[k] = crc32.Checksum([]byte{byte(k)}, castagnoli)
	}
	return t
}()

// Handle is an open file handle as the kernel knows it.
type Handle struct {
	Ino     uint64
	Flags   uint32
	Tracked bool // the engine counted the open (meta.OpenTracker)
	Locked  bool // a lock was taken through it
	// Request is the id of the kernel request (open or create) that
	// opened it (0: unknown), and KeepCache and DirectIO what its reply
	// told the kernel: a resent request is answered with this handle.
	Request   uint64
	KeepCache bool
	DirectIO  bool
}

// Owner is a lock owner holding locks on Ino, taken through handle Fh.
type Owner struct{ Ino, Owner, Fh uint64 }

// Write is an acknowledged write not known to be committed.
type Write struct {
	Ino, Off uint64
	Data     []byte
}

// State is what a journal says a mount was doing.
type State struct {
	Session uint64
	NextFh  uint64 // the highest handle number used
	Handles map[uint64]Handle
	Dirs    map[uint64]uint64 // fh → directory inode
	Owners  []Owner
	Writes  []Write // in the order they were acknowledged
	// NextSeq continues the numbering of writes and barriers across a
	// successor's journal.
	NextSeq uint64
	// Replies are the latest requests answered (at most ReplyKeep), and
	// the intents of requests with no outcome recorded (Reply.Intent),
	// by request id, for answering their resends (replies.go). Those of
	// opens are in Handles.
	Replies map[uint64]Reply
}

// Options tune a Journal.
type Options struct {
	// SegmentSize is the size past which the next segment starts
	// (0: DefaultSegmentSize).
	SegmentSize int64
	// Sync commits every write recorded before it is called to the engine
	// and the store, waiting for those whose record is written but whose
	// data is not yet buffered. It is called in the background after a
	// new segment starts; when it succeeds the older segments, which may
	// hold those writes' only records, are deleted.
	Sync   func() error
	Logger *slog.Logger
}

// Journal appends a mount's records. Its methods are safe for concurrent
// use; each returns once the record is in the kernel's page cache.
type Journal struct {
	dir  string
	opts Options

	mu       sync.Mutex
	seg      *segment // nil: closed
	segNo    uint64
	prev     *segment // the segment before seg, kept open to be reused
	spare    *segment // a former segment renamed spareName, reused by the next
	seq      uint64
	st       mirror
	rotating bool
	wg       sync.WaitGroup
}

// Create starts a journal in dir whose first segment holds st's handles
// (not its writes: the caller applied and committed them), then deletes
// every older segment.
func Create(dir string, st State, opts Options) (*Journal, error) {
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = DefaultSegmentSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal directory: %w", err)
	}
	if err := os.Mkdir(filepath.Join(dir, segName(guardSegment)), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("journal directory: %w", err)
	}
	old, err := segments(dir)
	if err != nil {
		return nil, err
	}
	next := uint64(1)
	if len(old) > 0 {
		next = old[len(old)-1] + 1
	}
	j := &Journal{dir: dir, opts: opts, st: mirrorOf(st)}
	j.seq = max(1, st.NextSeq)
	if err := j.startSegment(next); err != nil {
		return nil, err
	}
	for _, n := range old {
		_ = os.Remove(j.segPath(n))
	}
	_ = os.Remove(j.spareFile()) // a dead predecessor's
	return j, nil
}

func (j *Journal) segPath(n uint64) string { return filepath.Join(j.dir, segName(n)) }

func segName(n uint64) string { return fmt.Sprintf("seg-%016d", n) }

// segments lists the segment numbers in dir, oldest first (not the guard).
func segments(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal directory: %w", err)
	}
	var out []uint64
	for _, e := range ents {
		var n uint64
		if _, err := fmt.Sscanf(e.Name(), "seg-%d", &n); err == nil && strings.HasPrefix(e.Name(), "seg-") && n != guardSegment {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out, nil
}

// startSegment opens segment n and writes the checkpoint. Called with mu
// held (or before the journal is shared).
func (j *Journal) startSegment(n uint64) error {
	var seg *segment
	if j.spare != nil {
		if err := os.Rename(j.spareFile(), j.segPath(n)); err == nil {
			seg = j.spare
		} else {
			_ = j.spare.close()
		}
		j.spare = nil
	}
	if seg == nil {
		var err error
		if seg, err = openSegment(j.segPath(n), mapSize(j.opts.SegmentSize)); err != nil {
			return err
		}
	}
	if j.prev != nil {
		_ = j.prev.close()
	}
	j.prev, j.seg, j.segNo = j.seg, seg, n
	return j.writeCheckpoint()
}

func (j *Journal) spareFile() string { return filepath.Join(j.dir, spareName) }

// recycle makes the previous segment, whose writes are all committed,
// the spare that the next segment reuses (its pages are in the page
// cache already: writing over them costs a copy, where a new file's
// pages cost the file system an allocation each). Called with mu held.
func (j *Journal) recycle() {
	s := j.prev
	j.prev = nil
	if s == nil {
		return
	}
	if j.spare != nil || !s.reusable() {
		_ = s.close()
		return
	}
	s.reset((j.opts.SegmentSize/allocStep + 1) * allocStep) // an empty segment from here on, whatever its name
	if err := os.Rename(j.segPath(j.segNo-1), j.spareFile()); err != nil {
		_ = s.close()
		return
	}
	j.spare = s
}

// writeCheckpoint writes the mirror as the segment's first records (one
// at a time into a reused segment: see segment.write).
func (j *Journal) writeCheckpoint() error {
	var recs [][]byte
	add := func(kind byte, payload []byte) { recs = append(recs, appendRecord(nil, kind, payload)) }
	add(kindCheckpoint, u64s(j.st.session, j.st.nextFh, j.seq, Format))
	fhs := make([]uint64, 0, len(j.st.handles))
	for fh := range j.st.handles {
		fhs = append(fhs, fh)
	}
	sort.Slice(fhs, func(a, c int) bool { return fhs[a] < fhs[c] })
	for _, fh := range fhs {
		h := j.st.handles[fh]
		add(kindOpen, openPayload(fh, h))
		if h.Locked {
			add(kindLocked, u64s(fh))
		}
	}
	for fh, ino := range j.st.dirs {
		add(kindOpenDir, u64s(fh, ino))
	}
	for _, o := range j.st.ownerList() {
		add(kindOwner, u64s(o.Fh, o.Ino, o.Owner))
	}
	j.st.replies.each(func(req uint64, r Reply) {
		add(kindReply, replyPayload(req, r))
	})
	j.st.intents.each(func(req, ino uint64) {
		add(kindIntent, u64s(req, ino))
	})
	if !j.seg.reused {
		return j.seg.write(join(recs))
	}
	for _, r := range recs {
		if err := j.seg.write(r); err != nil {
			return err
		}
	}
	return nil
}

// append writes one record (payload, then data, which only a write has)
// and applies it to the mirror; a segment grown past its size is followed
// by a new one.
func (j *Journal) append(kind byte, payload, data []byte) error {
	_, err := j.appendSeq(kind, payload, data)
	return err
}

// appendSeq is append, returning a write's sequence number.
func (j *Journal) appendSeq(kind byte, payload, data []byte) (uint64, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.seg == nil {
		return 0, errors.New("journal: closed")
	}
	seq := j.seq
	if kind == kindWrite || kind == kindAppend {
		binary.LittleEndian.PutUint64(payload, seq)
		j.seq++
	}
	var h [headerSize]byte
	if err := j.seg.write(appendHeader(h[:0], kind, payload, data), payload, data); err != nil {
		return 0, err
	}
	j.st.apply(kind, payload)
	if kind == kindAppend {
		j.st.replies.add(binary.LittleEndian.Uint64(payload[24:]), Reply{Written: uint64(len(data))})
	}
	if j.seg.off >= j.opts.SegmentSize && !j.rotating {
		return seq, j.rotate()
	}
	return seq, nil
}

// rotate starts the next segment and, in the background, flushes the
// mount and deletes the older segments. Called with mu held.
func (j *Journal) rotate() error {
	if err := j.startSegment(j.segNo + 1); err != nil {
		return err
	}
	if j.opts.Sync == nil {
		_ = j.prev.close()
		j.prev = nil
		return nil
	}
	j.rotating = true
	keep := j.segNo
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		err := j.opts.Sync()
		j.mu.Lock()
		defer j.mu.Unlock()
		j.rotating = false
		if err != nil {
			j.opts.Logger.Warn("journal: flushing before dropping old segments failed; keeping them", "err", err)
			return
		}
		if j.seg != nil && j.segNo == keep {
			j.recycle()
		}
		old, _ := segments(j.dir)
		for _, n := range old {
			if n < keep {
				_ = os.Remove(j.segPath(n))
			}
		}
	}()
	return nil
}

// Close waits for a background flush and closes the segment, leaving the
// journal on disk for a successor.
func (j *Journal) Close() error {
	j.wg.Wait()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.seg == nil {
		return nil
	}
	for _, s := range []*segment{j.prev, j.spare} {
		if s != nil {
			_ = s.close()
		}
	}
	if j.spare != nil {
		_ = os.Remove(j.spareFile())
	}
	err := j.seg.close()
	j.seg, j.prev, j.spare = nil, nil, nil
	return err
}

// Remove closes the journal and deletes it: the mount ended cleanly.
func (j *Journal) Remove() error {
	_ = j.Close()
	return os.RemoveAll(j.dir)
}

// Session records the engine session the mount works for.
func (j *Journal) Session(id uint64) error { return j.append(kindSession, u64s(id), nil) }

// Open records an open handle, before the kernel learns it. With
// h.Request set, the kernel's resend of that request is answered with
// this handle by a successor (replies.go).
func (j *Journal) Open(fh uint64, h Handle) error {
	return j.append(kindOpen, openPayload(fh, h), nil)
}

// Release records the release of a handle (and of the lock owners
// remembered with it).
func (j *Journal) Release(fh uint64) error { return j.append(kindRelease, u64s(fh), nil) }

// OpenDir records an open directory handle.
func (j *Journal) OpenDir(fh, ino uint64) error { return j.append(kindOpenDir, u64s(fh, ino), nil) }

// ReleaseDir records the release of a directory handle.
func (j *Journal) ReleaseDir(fh uint64) error { return j.append(kindReleaseDir, u64s(fh), nil) }

// Locked records that a lock was taken through fh.
func (j *Journal) Locked(fh uint64) error { return j.append(kindLocked, u64s(fh), nil) }

// Owner records that owner took a lock on ino through fh.
func (j *Journal) Owner(fh, ino, owner uint64) error {
	return j.append(kindOwner, u64s(fh, ino, owner), nil)
}

// OwnerGone records that owner's locks on ino were dropped.
func (j *Journal) OwnerGone(ino, owner uint64) error {
	return j.append(kindOwnerGone, u64s(ino, owner), nil)
}

// Write records a write of p at off of ino, before it is acknowledged,
// and returns its sequence number (a later Mark is greater).
func (j *Journal) Write(ino, off uint64, p []byte) (uint64, error) {
	b := make([]byte, 24) // the sequence number goes first (append)
	binary.LittleEndian.PutUint64(b[8:], ino)
	binary.LittleEndian.PutUint64(b[16:], off)
	return j.appendSeq(kindWrite, b, p)
}

// Append is Write for a write through an O_APPEND descriptor that answers
// kernel request request: its reply, the byte count, is kept so that the
// kernel's resend of the request (after the successor replayed the write)
// is answered without appending the bytes again.
func (j *Journal) Append(ino, off, request uint64, p []byte) (uint64, error) {
	b := make([]byte, 32) // the sequence number goes first (append)
	binary.LittleEndian.PutUint64(b[8:], ino)
	binary.LittleEndian.PutUint64(b[16:], off)
	binary.LittleEndian.PutUint64(b[24:], request)
	return j.appendSeq(kindAppend, b, p)
}

// Mark returns a mark: the writes journaled so far are before it.
func (j *Journal) Mark() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.seq
}

// Barrier records that every write of ino journaled before mark is
// committed.
func (j *Journal) Barrier(ino, mark uint64) error { return j.append(kindBarrier, u64s(ino, mark), nil) }

func appendRecord(b []byte, kind byte, payload []byte) []byte {
	return append(appendHeader(b, kind, payload, nil), payload...)
}

// appendHeader appends the header of a record whose body is payload
// followed by data.
func appendHeader(b []byte, kind byte, payload, data []byte) []byte {
	var h [headerSize]byte
	binary.LittleEndian.PutUint32(h[:], uint32(len(payload)+len(data)))
	crc := crc32.Update(kindCRC[kind], castagnoli, payload)
	binary.LittleEndian.PutUint32(h[4:], crc32.Update(crc, castagnoli, data))
	h[8] = kind
	return append(b, h[:]...)
}

func u64s(vs ...uint64) []byte {
	b := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
	return b
}

// openPayload is an open record: fh, ino, flags, tracked (1 byte), then
// (format 2) request and the reply bits (1 byte: 1 keep cache, 2 direct).
func openPayload(fh uint64, h Handle) []byte {
	b := u64s(fh, h.Ino, uint64(h.Flags))
	b = append(b, bit(h.Tracked, 1))
	b = binary.LittleEndian.AppendUint64(b, h.Request)
	return append(b, bit(h.KeepCache, 1)|bit(h.DirectIO, 2))
}

func bit(on bool, v byte) byte {
	if on {
		return v
	}
	return 0
}
