package vfs

import (
	"context"
	"syscall"

	"shoal/internal/meta"
)

// Seek whence values for sparse files, as lseek(2).
const (
	SeekData = 3
	SeekHole = 4
)

// Lseek finds the next data (SeekData) or hole (SeekHole) at or after off,
// from the file's slice lists: a never-written range and a punched hole are
// holes; anything written, even zeros, is data. The end of the file counts
// as a hole. ENXIO when off is past the end, or no data follows it.
func (fs *FS) Lseek(ctx context.Context, fh Fh, off uint64, whence int) (uint64, error) {
	if whence != SeekData && whence != SeekHole {
		return 0, syscall.EINVAL
	}
	h, err := fs.handle(fh)
	if err != nil {
		return 0, err
	}
	f := h.file
	if err := f.flush(ctx); err != nil {
		return 0, err
	}
	f.mu.Lock()
	length := f.length
	f.mu.Unlock()
	if off >= length {
		return 0, syscall.ENXIO
	}
	for index := uint32(off / meta.ChunkSize); uint64(index)*meta.ChunkSize < length; index++ {
		slices, err := f.chunk(ctx, index)
		if err != nil {
			return 0, err
		}
		if pos, ok := seekInChunk(slices, index, off, whence == SeekData); ok {
			return min(pos, length), nil
		}
	}
	if whence == SeekHole {
		return length, nil
	}
	return 0, syscall.ENXIO
}

// seekInChunk returns the first file offset at or after off inside chunk
// index where data (or a hole) starts.
func seekInChunk(slices []meta.Slice, index uint32, off uint64, data bool) (uint64, bool) {
	base := uint64(index) * meta.ChunkSize
	for _, p := range meta.Resolve(slices, 0, meta.ChunkSize) {
		end := base + uint64(p.Pos) + uint64(p.Len)
		if end <= off || (p.ID != 0) != data {
			continue
		}
		return max(off, base+uint64(p.Pos)), true
	}
	return 0, false
}
