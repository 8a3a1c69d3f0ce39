package fsck

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"syscall"

	"shoal/internal/meta"
)

// readdirPage is how many entries one Readdir call returns.
const readdirPage = 1000

// admin is the identity fsck reads and repairs as: permission checks off.
func admin(ctx context.Context) context.Context {
	return meta.WithCred(ctx, meta.Cred{Trusted: true})
}

func isNotFound(err error) bool { return errors.Is(err, syscall.ENOENT) }

// findFiles maps the damaged blocks to the files, and file ranges, that
// read them, then finds those files' paths.
func (c *checker) findFiles(ctx context.Context) error {
	if len(c.rep.Damaged) == 0 {
		return nil
	}
	c.prog.Set("finding files", 0, int64(len(c.rep.Damaged)))
	files := map[meta.Ino]*File{}
	for i := range c.rep.Damaged {
		b := &c.rep.Damaged[i]
		b.Shadowed = true
		for _, h := range c.refs[b.Slice].holders {
			ranges, err := c.visibleRanges(ctx, h, *b)
			if err != nil {
				return err
			}
			if len(ranges) == 0 {
				continue // shadowed by later writes: no read sees it
			}
			b.Shadowed = false
			f := files[h.ino]
			if f == nil {
				f = &File{Ino: h.ino}
				files[h.ino] = f
			}
			f.Ranges = append(f.Ranges, ranges...)
			if !slices.Contains(f.Keys, b.Key) {
				f.Keys = append(f.Keys, b.Key)
			}
		}
		c.prog.Add(1)
	}
	if err := c.findPaths(ctx, files); err != nil {
		return err
	}
	for _, f := range files {
		slices.SortFunc(f.Ranges, func(a, b Range) int { return compare(a.Off, b.Off) })
		c.rep.Files = append(c.rep.Files, *f)
	}
	slices.SortFunc(c.rep.Files, func(a, b File) int { return compare(a.Ino, b.Ino) })
	return nil
}

func compare[T ~uint64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// visibleRanges returns the file ranges of holder h where reads see block
// b's data.
func (c *checker) visibleRanges(ctx context.Context, h holder, b Block) ([]Range, error) {
	ss, err := c.eng.ReadChunk(ctx, h.ino, h.chunk)
	if err != nil {
		if isNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("fsck: reading inode %d chunk %d: %w", h.ino, h.chunk, err)
	}
	bs := uint64(c.o.BlockSize)
	lo, hi := uint64(b.Index)*bs, uint64(b.Index+1)*bs // block b's bytes in the slice's data
	var out []Range
	for _, p := range meta.Resolve(ss, 0, meta.ChunkSize) {
		if p.ID != b.Slice {
			continue
		}
		from, to := max(lo, uint64(p.Off)), min(hi, uint64(p.Off)+uint64(p.Len))
		if from >= to {
			continue
		}
		off := uint64(h.chunk)*meta.ChunkSize + uint64(p.Pos) + (from - uint64(p.Off))
		out = append(out, Range{Off: off, Len: to - from})
	}
	return out, nil
}

// findPaths walks the tree once and records every path of the files.
func (c *checker) findPaths(ctx context.Context, files map[meta.Ino]*File) error {
	ctx = admin(ctx)
	type dir struct {
		ino  meta.Ino
		path string
	}
	queue := []dir{{meta.RootIno, "/"}}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		err := c.eachEntry(ctx, d.ino, func(e meta.DirEntry) {
			p := path.Join(d.path, e.Name)
			if f := files[e.Ino]; f != nil {
				f.Paths = append(f.Paths, p)
			}
			if e.Type == meta.TypeDir {
				queue = append(queue, dir{e.Ino, p})
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// eachEntry calls fn for each entry of directory ino, a page at a time.
func (c *checker) eachEntry(ctx context.Context, ino meta.Ino, fn func(meta.DirEntry)) error {
	after := ""
	for {
		page, err := c.eng.Readdir(ctx, ino, after, readdirPage, false)
		if err != nil {
			if isNotFound(err) || errors.Is(err, syscall.ENOTDIR) {
				return nil // removed while we walked
			}
			return fmt.Errorf("fsck: reading directory %d: %w", ino, err)
		}
		for _, e := range page {
			fn(e)
		}
		if len(page) < readdirPage {
			return nil
		}
		after = page[len(page)-1].Name
	}
}

// zeroDamaged punches the damaged ranges of every file into holes.
func (c *checker) zeroDamaged(ctx context.Context) error {
	ctx = admin(ctx)
	c.prog.Set("zeroing", 0, int64(len(c.rep.Files)))
	const punch = 0x02 | 0x01 // FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
	for i := range c.rep.Files {
		f := &c.rep.Files[i]
		for _, r := range f.Ranges {
			if _, err := c.eng.Fallocate(ctx, f.Ino, punch, r.Off, r.Len); err != nil {
				return fmt.Errorf("fsck: zeroing inode %d [%d, +%d): %w", f.Ino, r.Off, r.Len, err)
			}
		}
		f.Zeroed = true
		c.rep.Repairs = append(c.rep.Repairs, fmt.Sprintf("zeroed %d damaged ranges of %s", len(f.Ranges), fileName(*f)))
		c.prog.Add(1)
	}
	return nil
}

// fileName names a file for messages: its first path, or its inode.
func fileName(f File) string {
	if len(f.Paths) > 0 {
		return fmt.Sprintf("%s (inode %d)", f.Paths[0], f.Ino)
	}
	return fmt.Sprintf("unlinked inode %d", f.Ino)
}
