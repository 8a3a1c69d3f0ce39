package data

import (
	"sync"
	"unsafe"

	"shoal/internal/meta"
)

// Random reads of a long slice list (a VM image after a burst of random
// writes: thousands of records per chunk) would each scan the whole list
// in meta.Resolve. The Store keeps, per chunk, the painting of a list
// that keeps being read, shared by every Reader of the file (each guest
// thread, each open descriptor). A list is recognised by identity, the
// backing array and length the caller passes (vfs hands out one cached
// list per chunk until it changes, and lists are never changed in place),
// so a hit costs O(1); the entry keeps the list referenced, so its array
// cannot be reused for another list while the entry lives. A list is
// painted once paintAfter reads have used it: a list that changes with
// every write is never painted for nothing.

// paintMinLen is the list length from which random reads use shared
// paintings; shorter lists resolve as fast as a painting is found.
const paintMinLen = 128

// paintAfter is how many random reads of one list come before it is
// painted (a painting costs about as much as that many window scans).
const paintAfter = 32

// maxSharedPaints bounds the chunks with a shared painting.
const maxSharedPaints = 256

type sharedPaints struct {
	mu sync.Mutex
	m  map[chunkKey]*sharedPaint
}

type chunkKey struct {
	ino   meta.Ino
	index uint32
}

type sharedPaint struct {
	list    []meta.Slice // the list it stands for (kept referenced)
	reads   int          // reads of list so far
	painted []meta.Slice // nil until painted
}

func sameList(a, b []meta.Slice) bool {
	return len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}

// lookup returns the painting of list for chunk index of ino if it is
// kept, painting it now if list has been read paintAfter times; else nil.
// The result is shared and must not be modified.
func (s *sharedPaints) lookup(ino meta.Ino, index uint32, list []meta.Slice) []meta.Slice {
	if len(list) < paintMinLen {
		return nil
	}
	k := chunkKey{ino, index}
	s.mu.Lock()
	e := s.m[k]
	if e == nil || !sameList(e.list, list) {
		if s.m == nil {
			s.m = make(map[chunkKey]*sharedPaint)
		}
		if len(s.m) >= maxSharedPaints && e == nil {
			for old := range s.m {
				delete(s.m, old)
				break
			}
		}
		e = &sharedPaint{list: list}
		s.m[k] = e
	}
	e.reads++
	painted, paint := e.painted, e.painted == nil && e.reads == paintAfter
	s.mu.Unlock()
	if !paint {
		return painted
	}
	painted = meta.Resolve(list, 0, meta.ChunkSize)
	s.mu.Lock()
	if s.m[k] == e {
		e.painted = painted
	}
	s.mu.Unlock()
	return painted
}
