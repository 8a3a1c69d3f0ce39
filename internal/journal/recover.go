package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
)

// mirror is the handle state the records describe, kept by a Journal for
// its checkpoints and rebuilt by Recover.
type mirror struct {
	session uint64
	nextFh  uint64
	handles map[uint64]Handle
	dirs    map[uint64]uint64
	owners  map[ownerKey]uint64 // → fh the owner locked through
	replies replyRing
	intents intentSet
}

type ownerKey struct{ ino, owner uint64 }

func newMirror() mirror {
	return mirror{handles: map[uint64]Handle{}, dirs: map[uint64]uint64{}, owners: map[ownerKey]uint64{}}
}

func mirrorOf(st State) mirror {
	m := newMirror()
	m.session, m.nextFh = st.Session, st.NextFh
	for fh, h := range st.Handles {
		m.handles[fh] = h
	}
	for fh, ino := range st.Dirs {
		m.dirs[fh] = ino
	}
	for _, o := range st.Owners {
		m.owners[ownerKey{o.Ino, o.Owner}] = o.Fh
	}
	m.addReplies(st.Replies)
	return m
}

func (m *mirror) ownerList() []Owner {
	out := make([]Owner, 0, len(m.owners))
	for k, fh := range m.owners {
		out = append(out, Owner{Ino: k.ino, Owner: k.owner, Fh: fh})
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Ino != out[b].Ino {
			return out[a].Ino < out[b].Ino
		}
		return out[a].Owner < out[b].Owner
	})
	return out
}

func (m *mirror) seeFh(fh uint64) { m.nextFh = max(m.nextFh, fh) }

// apply applies one record other than a write or a barrier.
func (m *mirror) apply(kind byte, p []byte) {
	v := func(i int) uint64 { return binary.LittleEndian.Uint64(p[8*i:]) }
	switch kind {
	case kindSession:
		m.session = v(0)
	case kindOpen:
		h := Handle{Ino: v(1), Flags: uint32(v(2)), Tracked: p[24] == 1}
		if len(p) >= 34 { // format 2
			h.Request = binary.LittleEndian.Uint64(p[25:])
			h.KeepCache, h.DirectIO = p[33]&1 != 0, p[33]&2 != 0
		}
		m.handles[v(0)] = h
		m.seeFh(v(0))
		if h.Request != 0 { // a create's outcome
			m.intents.settle(h.Request)
		}
	case kindRelease:
		delete(m.handles, v(0))
		for k, fh := range m.owners {
			if fh == v(0) {
				delete(m.owners, k)
			}
		}
	case kindOpenDir:
		m.dirs[v(0)] = v(1)
		m.seeFh(v(0))
	case kindReleaseDir:
		delete(m.dirs, v(0))
	case kindLocked:
		if h, ok := m.handles[v(0)]; ok {
			h.Locked = true
			m.handles[v(0)] = h
		}
	case kindOwner:
		k := ownerKey{v(1), v(2)}
		if _, ok := m.owners[k]; !ok {
			m.owners[k] = v(0)
		}
	case kindOwnerGone:
		delete(m.owners, ownerKey{v(0), v(1)})
	case kindReply:
		m.applyReply(p)
	case kindIntent:
		m.intents.add(v(0), v(1))
	}
}

// payloadSize is the least payload of each kind (a write's bytes follow
// its 24, an append's its 32, a reply's data its 16; format 1 wrote
// shorter checkpoints and opens).
var payloadSize = map[byte]int{
	kindCheckpoint: 24, kindSession: 8, kindOpen: 25, kindRelease: 8, kindOpenDir: 16,
	kindReleaseDir: 8, kindLocked: 8, kindOwner: 24, kindOwnerGone: 16, kindWrite: 24, kindBarrier: 16,
	kindAppend: 32, kindReply: 16, kindIntent: 16,
}

// ErrNewerFormat is returned by Recover for a journal written by a later
// version of this package (its Format is greater): the caller must not
// take it over, since it cannot tell what the journal holds.
var ErrNewerFormat = errors.New("journal: written in a newer format than this binary reads")

type seqWrite struct {
	seq uint64
	w   Write
}

// Recover reads the journal in dir: the handle state as of its last
// record, the writes no barrier covers, in journal order, and the latest
// replies. A journal that does not exist is an empty state; one of a
// later format is ErrNewerFormat.
func Recover(dir string) (State, error) {
	segs, err := segments(dir)
	if err != nil {
		return State{}, err
	}
	m := newMirror()
	var writes []seqWrite
	barrier := map[uint64]uint64{}
	var seq uint64
	for _, n := range segs {
		b, err := os.ReadFile(filepath.Join(dir, segName(n)))
		if err != nil {
			return State{}, fmt.Errorf("journal: %w", err)
		}
		for len(b) >= headerSize {
			size := int(binary.LittleEndian.Uint32(b))
			kind := b[8]
			if len(b) < headerSize+size {
				break // cut short: never acknowledged
			}
			body := b[headerSize : headerSize+size]
			want := crc32.Update(crc32.Checksum([]byte{kind}, castagnoli), castagnoli, body)
			if want != binary.LittleEndian.Uint32(b[4:]) || size < payloadSize[kind] || payloadSize[kind] == 0 {
				break
			}
			b = b[headerSize+size:]
			switch kind {
			case kindCheckpoint:
				if len(body) >= 32 && binary.LittleEndian.Uint64(body[24:]) > Format {
					return State{}, fmt.Errorf("%w (format %d, this binary reads up to %d): %s", ErrNewerFormat, binary.LittleEndian.Uint64(body[24:]), Format, dir)
				}
				m = newMirror()
				m.session, m.nextFh = binary.LittleEndian.Uint64(body), binary.LittleEndian.Uint64(body[8:])
				seq = max(seq, binary.LittleEndian.Uint64(body[16:]))
			case kindWrite, kindAppend:
				at := payloadSize[kind]
				w := Write{Ino: binary.LittleEndian.Uint64(body[8:]), Off: binary.LittleEndian.Uint64(body[16:]), Data: body[at:]}
				writes = append(writes, seqWrite{binary.LittleEndian.Uint64(body), w})
				seq = max(seq, binary.LittleEndian.Uint64(body)+1)
				if kind == kindAppend {
					m.replies.add(binary.LittleEndian.Uint64(body[24:]), Reply{Written: uint64(len(w.Data))})
				}
			case kindBarrier:
				ino, mark := binary.LittleEndian.Uint64(body), binary.LittleEndian.Uint64(body[8:])
				barrier[ino] = max(barrier[ino], mark)
				seq = max(seq, mark)
			default:
				m.apply(kind, body)
			}
		}
	}
	st := State{Session: m.session, NextFh: m.nextFh, Handles: m.handles, Dirs: m.dirs, Owners: m.ownerList(), NextSeq: seq,
		Replies: m.allReplies()}
	for _, sw := range writes {
		if sw.seq >= barrier[sw.w.Ino] {
			st.Writes = append(st.Writes, sw.w)
		}
	}
	return st, nil
}

// SaveInit keeps the kernel's INIT request, for servers that take over
// the connection later.
func SaveInit(dir string, raw []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "init.tmp")
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "init"))
}

// LoadInit returns the INIT request SaveInit kept.
func LoadInit(dir string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, "init"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no kernel INIT saved in %s: the mount's first server did not start", dir)
	}
	return b, err
}

// SaveVolume records which volume (its UUID) the journal in dir belongs
// to, so that a later mount of another volume at the same place does not
// apply it.
func SaveVolume(dir, uuid string) error {
	tmp := filepath.Join(dir, "volume.tmp")
	if err := os.WriteFile(tmp, []byte(uuid), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "volume"))
}

// LoadVolume returns the UUID SaveVolume recorded ("" if none).
func LoadVolume(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "volume"))
	return string(b)
}
