package multihost

import (
	"fmt"
	"slices"
	"time"
)

// The cross-mount model: what one local disk would show, plus the
// windows in which Shoal's documented caches may still show an older
// state on another mount.
//
// Strict (no window): an open(2) on any mount that starts after a
// close(2) or fsync(2) returned anywhere sees that data and size, from
// fstat and from reads; a file open anywhere stays readable and writable
// through its descriptor after another mount unlinks it or renames over
// it. Windowed: which inode a name resolves to may be one the name had up
// to the entry timeout ago (plus slack); stat(2) by name may report a
// size the file had up to the attribute timeout ago.

// span is the time an operation ran: what it did took effect somewhere
// in between.
type span struct{ start, end time.Time }

// overlaps reports whether s meets [from, to].
func (s span) overlaps(from, to time.Time) bool { return !s.end.Before(from) && !s.start.After(to) }

// modelFile is one inode of the model.
type modelFile struct {
	id   int
	ino  uint64
	data []byte
	// versions are the file's sizes with the time each held; the last
	// one holds until now.
	versions []version
	links    int          // names in the model's tree
	holders  map[int]bool // handles holding it open
	gone     bool         // purged: no names, no holders
}

type version struct {
	size int
	span span // from the start of the op that made it to the end of the next
}

// nameState is one value a name had: a file id, or 0 for no such name.
type nameState struct {
	id   int
	span span
	by   int       // mount that made the change
	made time.Time // when the op that made it returned
}

// model is the expected state of the volume's one directory.
type model struct {
	files   map[int]*modelFile
	byIno   map[uint64]int
	names   map[string][]nameState // history per name, oldest first
	nextID  int
	window  time.Duration // entry timeout plus slack
	attrWin time.Duration // attribute timeout plus slack
}

func newModel(window, attrWin time.Duration) *model {
	return &model{files: map[int]*modelFile{}, byIno: map[uint64]int{}, names: map[string][]nameState{},
		window: window, attrWin: attrWin}
}

// current is the file id name has now (0: none).
func (m *model) current(name string) int {
	h := m.names[name]
	if len(h) == 0 {
		return 0
	}
	return h[len(h)-1].id
}

// setName records that name maps to id (0: removed) from op s on, made
// by mount by.
func (m *model) setName(name string, id int, s span, by int) {
	h := m.names[name]
	if len(h) > 0 {
		h[len(h)-1].span.end = s.end
	}
	m.names[name] = append(h, nameState{id: id, span: span{s.start, farFuture}, by: by, made: s.end})
}

var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// settledFor reports whether mount mnt can only see name's current state:
// the last change was its own, or older than the window.
func (m *model) settledFor(name string, mnt int, now time.Time) bool {
	h := m.names[name]
	if len(h) == 0 {
		return true
	}
	last := h[len(h)-1]
	return last.by == mnt || now.Sub(last.made) > m.window
}

// candidates are the file ids (0 for "no such name") a lookup of name
// during s may resolve to: every state the name had within the window
// before s.
func (m *model) candidates(name string, s span) []int {
	var ids []int
	for _, st := range m.names[name] {
		if st.span.overlaps(s.start.Add(-m.window), s.end) && !slices.Contains(ids, st.id) {
			ids = append(ids, st.id)
		}
	}
	if len(ids) == 0 {
		ids = []int{0}
	}
	return ids
}

// resolve checks an operation's outcome on name against the candidates:
// a missing-name error must be allowed (the name was absent in the
// window, or a candidate inode is gone), and a success must have found an
// inode among them. It returns the file operated on (nil with ok for an
// allowed ENOENT).
func (m *model) resolve(name string, s span, r agentResp) (*modelFile, error) {
	cands := m.candidates(name, s)
	if r.Err == "ENOENT" || r.Err == "ESTALE" {
		for _, id := range cands {
			if id == 0 || m.files[id].gone {
				return nil, nil
			}
		}
		return nil, fmt.Errorf("%s: %s, but the name has been file %v throughout the last %v", name, r.Err, cands, m.window)
	}
	if r.Err != "" {
		return nil, fmt.Errorf("%s: unexpected error %s", name, r.Err)
	}
	id, ok := m.byIno[r.Ino]
	if !ok || !slices.Contains(cands, id) {
		return nil, fmt.Errorf("%s: resolved to inode %d (file %d), want one of files %v", name, r.Ino, id, cands)
	}
	return m.files[id], nil
}

// newFile adds a file created by op s with data.
func (m *model) newFile(ino uint64, data []byte, s span) *modelFile {
	m.nextID++
	f := &modelFile{id: m.nextID, ino: ino, holders: map[int]bool{}}
	m.files[f.id] = f
	m.byIno[ino] = f.id
	m.setData(f, data, s)
	return f
}

// setData records f's new content, made by op s.
func (m *model) setData(f *modelFile, data []byte, s span) {
	f.data = data
	if n := len(f.versions); n > 0 {
		f.versions[n-1].span.end = s.end
	}
	f.versions = append(f.versions, version{size: len(data), span: span{s.start, farFuture}})
}

// sizeAllowed reports whether a stat during s may show size for f: a
// size f had within the attribute window.
func (m *model) sizeAllowed(f *modelFile, size int64, s span) bool {
	for _, v := range f.versions {
		if int64(v.size) == size && v.span.overlaps(s.start.Add(-m.attrWin), s.end) {
			return true
		}
	}
	return false
}

// unlinkName removes name's link to its file (unlink, or rename over).
func (m *model) unlinkName(id int) {
	if id == 0 {
		return
	}
	f := m.files[id]
	f.links--
	m.maybeGone(f)
}

func (m *model) maybeGone(f *modelFile) {
	if f.links == 0 && len(f.holders) == 0 {
		f.gone = true
	}
}

// live counts the files that must still exist: linked or held open.
func (m *model) live() int {
	n := 0
	for _, f := range m.files {
		if !f.gone {
			n++
		}
	}
	return n
}

// applyWrite returns data after a write request.
func applyWrite(data []byte, req agentReq) []byte {
	out := slices.Clone(data)
	switch req.Mode {
	case "append":
		return append(out, randBytes(req.Seed, req.N)...)
	case "otrunc":
		return randBytes(req.Seed, req.N)
	case "trunc":
		if req.N <= len(out) {
			return out[:req.N]
		}
		return append(out, make([]byte, req.N-len(out))...)
	}
	return pwrite(out, req.Off, randBytes(req.Seed, req.N))
}

// pwrite writes p at off, extending with zeros as needed (a write of no
// bytes changes nothing, as pwrite(2)).
func pwrite(data []byte, off int64, p []byte) []byte {
	if len(p) == 0 {
		return data
	}
	if end := int(off) + len(p); end > len(data) {
		data = append(data, make([]byte, end-len(data))...)
	}
	copy(data[off:], p)
	return data
}
