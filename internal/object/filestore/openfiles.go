package filestore

import (
	"container/list"
	"io"
	"sync"

	"golang.org/x/sys/unix"
)

// maxOpenFiles bounds the descriptors kept open for small ranged reads:
// enough for every block of a 16 GiB image, and at most a quarter of the
// process's descriptor limit (see keptLimit).
const maxOpenFiles = 4096

// keptLimit is how many descriptors a store keeps open: maxOpenFiles, or
// a quarter of the descriptor limit if that is lower (at least 16).
func keptLimit() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 64
	}
	return int(max(16, min(uint64(maxOpenFiles), rl.Cur/4)))
}

// openFiles keeps the files of recently read objects open for small
// ranged reads. A random 4 KiB read of a VM image otherwise pays open,
// fstat, fadvise and close around its one pread, and the path walk of the
// open is the dearest of them. Objects are immutable, so a kept descriptor
// reads what a fresh one would, as long as the file is still the object:
// every use checks with fstat that it has not been unlinked (Delete, a
// rename over it, or someone removing it under the store) or resized,
// and this store's own Put and Delete drop the key first.
type openFiles struct {
	mu    sync.Mutex
	limit int // descriptors kept at most (keptLimit, set on first add)
	m     map[string]*openFile
	lru   list.List // of *openFile, most recently used first
}

// openFile is one kept descriptor. refs counts readers using it; an entry
// dropped from the map (evicted, stale, deleted) is closed by its last
// reader.
type openFile struct {
	key     string
	fd      int
	size    int64
	refs    int
	dropped bool
	elem    *list.Element
}

// acquire returns the kept file of key with a reference taken, or nil.
// It checks the file is still linked and of the size it was opened with.
func (o *openFiles) acquire(key string) *openFile {
	o.mu.Lock()
	f := o.m[key]
	if f != nil {
		f.refs++
		o.lru.MoveToFront(f.elem)
	}
	o.mu.Unlock()
	if f == nil {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(f.fd, &st); err != nil || st.Nlink == 0 || st.Size != f.size {
		o.drop(key, f)
		o.release(f)
		return nil
	}
	return f
}

// add keeps fd open for key with one reference taken for the caller, and
// evicts the least recently used entries past the limit. If key is
// kept already (a concurrent reader opened it too), fd is still returned
// as a private entry that its reader closes.
func (o *openFiles) add(key string, fd int, size int64) *openFile {
	f := &openFile{key: key, fd: fd, size: size, refs: 1}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = make(map[string]*openFile)
		if o.limit == 0 {
			o.limit = keptLimit()
		}
	}
	if _, ok := o.m[key]; ok {
		f.dropped = true
		return f
	}
	o.m[key] = f
	f.elem = o.lru.PushFront(f)
	for len(o.m) > o.limit {
		old := o.lru.Back().Value.(*openFile)
		o.unlink(old)
	}
	return f
}

// forget drops key's kept file, if any: the object is being replaced or
// deleted.
func (o *openFiles) forget(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if f := o.m[key]; f != nil {
		o.unlink(f)
	}
}

// drop removes f from the map if it is still key's entry.
func (o *openFiles) drop(key string, f *openFile) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m[key] == f {
		o.unlink(f)
	}
}

// unlink removes f from the map and list (o.mu held); the descriptor is
// closed now if no reader holds it, else by the last release.
func (o *openFiles) unlink(f *openFile) {
	delete(o.m, f.key)
	o.lru.Remove(f.elem)
	f.dropped = true
	if f.refs == 0 {
		unix.Close(f.fd)
	}
}

// release gives up a reference taken by acquire or add.
func (o *openFiles) release(f *openFile) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f.refs--
	if f.refs == 0 && f.dropped {
		unix.Close(f.fd)
	}
}

// keptReader reads bytes [off, end) of a kept file with pread.
type keptReader struct {
	o        *openFiles
	f        *openFile
	off, end int64
}

func (r *keptReader) Read(p []byte) (int, error) {
	if r.f == nil {
		return 0, io.ErrClosedPipe
	}
	if r.off >= r.end {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.end-r.off)]
	for {
		n, err := unix.Pread(r.f.fd, p, r.off)
		if err == unix.EINTR {
			continue
		}
		if n > 0 {
			r.off += int64(n)
			return n, nil
		}
		if err != nil {
			return 0, err
		}
		return 0, io.ErrUnexpectedEOF // shrank under us
	}
}

func (r *keptReader) Close() error {
	if r.f != nil {
		r.o.release(r.f)
		r.f = nil
	}
	return nil
}
