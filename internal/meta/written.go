package meta

import (
	"context"
	"sync"
)

// Written collects what an operation's committed engine transactions
// wrote to inode attributes: the attributes as committed, and the inodes
// deleted. A mount passes one in the context of a change (WithWritten) to
// learn the new attributes of the directories it changed without reading
// them again, and which inodes the change touched at all. Engines that do
// not fill it leave it empty: the caller then knows nothing and must ask.
// Only committed transactions are reported, each after its commit, so for
// one operation a later report is the newer.
type Written struct {
	mu      sync.Mutex
	attrs   map[Ino]Attr
	dropped []Ino
}

type writtenKey struct{}

// WithWritten returns a context whose engine changes are reported to w.
func WithWritten(ctx context.Context, w *Written) context.Context {
	return context.WithValue(ctx, writtenKey{}, w)
}

// WrittenTo returns the context's Written, or nil.
func WrittenTo(ctx context.Context) *Written {
	w, _ := ctx.Value(writtenKey{}).(*Written)
	return w
}

// Wrote records ino's attributes as a commit wrote them.
func (w *Written) Wrote(ino Ino, a Attr) {
	w.mu.Lock()
	if w.attrs == nil {
		w.attrs = make(map[Ino]Attr, 4)
	}
	w.attrs[ino] = a
	w.mu.Unlock()
}

// Dropped records that a commit deleted ino.
func (w *Written) Dropped(ino Ino) {
	w.mu.Lock()
	delete(w.attrs, ino)
	w.dropped = append(w.dropped, ino)
	w.mu.Unlock()
}

// Attr returns the attributes last written to ino, if any were.
func (w *Written) Attr(ino Ino) (Attr, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	a, ok := w.attrs[ino]
	return a, ok
}

// Inos returns every inode written or deleted.
func (w *Written) Inos() []Ino {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Ino, 0, len(w.attrs)+len(w.dropped))
	for ino := range w.attrs {
		out = append(out, ino)
	}
	return append(out, w.dropped...)
}
