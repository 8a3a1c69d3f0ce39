package meta

import "context"

// Opened collects what an engine learned of an inode while opening it
// (OpenTracker.Open) beyond its attributes, as of the same instant. A
// mount passes one in the open's context (WithOpened); an engine that
// does not fill it leaves it zero, and the caller knows nothing more.
type Opened struct {
	// NoXattrs: the inode has no extended attributes (so no
	// security.capability, which the kernel asks for before the first
	// write of an open).
	NoXattrs bool
	// Chunk0, if HasChunk0, is the slice list of the file's first chunk
	// (meta.Engine.ReadChunk's answer), when the engine had it at hand
	// without reading more (kvmeta: its chunk cache, at the generation
	// of the attributes the open read): the first read of a small file
	// then needs no engine read.
	Chunk0    []Slice
	HasChunk0 bool
}

type openedKey struct{}

// WithOpened returns a context whose Open reports to o.
func WithOpened(ctx context.Context, o *Opened) context.Context {
	return context.WithValue(ctx, openedKey{}, o)
}

// OpenedTo returns the context's Opened, or nil.
func OpenedTo(ctx context.Context) *Opened {
	o, _ := ctx.Value(openedKey{}).(*Opened)
	return o
}
