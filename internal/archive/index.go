package archive

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"

	"shoal/internal/backup"
	"shoal/internal/data"
	"shoal/internal/meta"
	"shoal/internal/object"
	"shoal/internal/volume"
)

// indexFile is the name of a backup's block index, beside its dump.
const indexFile = "blocks.zst"

// indexMagic starts a block index (before compression).
const indexMagic = "shoal-backup-blocks 1\n"

// spotChecks is how many of the blocks a backup takes as present on the
// word of the last backup's index are looked up (Head) first.
const spotChecks = 8

func indexKey(name string) string { return Prefix + name + "/" + indexFile }

// indexEntry is one slice of a block index: its size and the stored
// sizes of its blocks.
type indexEntry struct {
	id     meta.SliceID
	size   uint32
	stored []int64
}

// present is what a destination holds: the blocks of its newest backup,
// from that backup's block index, or, without one, every block listed.
type present struct {
	dest    object.Store
	f       meta.Format
	base    *Manifest // the newest backup, nil if none
	mu      sync.Mutex
	sizes   map[string]int64 // key → stored size; nil until loaded
	listed  bool             // sizes is a listing, not an index
	checked bool             // an index was spot-checked
}

// missing returns the blocks dest lacks, or holds in a size no stored
// form of them takes. The first call loads what dest holds; an index is
// then spot-checked, and dest listed after all if the check fails.
func (p *present) missing(ctx context.Context, blocks []block) ([]block, error) {
	if p.sizes == nil {
		if err := p.load(ctx); err != nil {
			return nil, err
		}
	}
	todo := missing(blocks, p.sizes, p.f)
	if p.listed || p.checked {
		return todo, nil
	}
	p.checked = true
	ok, err := p.spotCheck(ctx, blocks, todo)
	if err != nil || ok {
		return todo, err
	}
	if err := p.list(ctx); err != nil {
		return nil, err
	}
	return missing(blocks, p.sizes, p.f), nil
}

// load reads the newest backup's index; without one (backups made
// before indexes, a damaged index, no backup yet), it lists dest.
func (p *present) load(ctx context.Context) error {
	if p.base != nil {
		if sizes, err := readIndex(ctx, p.dest, p.base.Name); err == nil {
			p.sizes = sizes
			return nil
		}
	}
	return p.list(ctx)
}

func (p *present) list(ctx context.Context) error {
	sizes, err := listBlocks(ctx, p.dest)
	p.sizes, p.listed = sizes, true
	return err
}

// spotCheck looks up a few of the blocks taken as present (blocks not in
// todo) and reports whether all are there in a size their format allows.
func (p *present) spotCheck(ctx context.Context, blocks, todo []block) (bool, error) {
	skip := make(map[string]bool, len(todo))
	for _, b := range todo {
		skip[b.key] = true
	}
	var sample []block
	for i, b := range blocks {
		if skip[b.key] {
			continue
		}
		// Reservoir sampling: each block taken as present is as likely.
		if len(sample) < spotChecks {
			sample = append(sample, b)
		} else if j := rand.IntN(i + 1); j < spotChecks {
			sample[j] = b
		}
	}
	ok := volume.StoredSizeOK(p.f)
	var mu sync.Mutex
	good := true
	err := parallel(ctx, sample, spotChecks, func(ctx context.Context, b block) error {
		info, err := p.dest.Head(ctx, b.key)
		if err != nil && !errors.Is(err, object.ErrNotExist) {
			return err
		}
		if err != nil || !ok(info.Size, int64(b.size)) {
			mu.Lock()
			good = false
			mu.Unlock()
		}
		return nil
	})
	return good, err
}

// add records a block copied to dest (concurrent calls are fine).
func (p *present) add(key string, stored int64) {
	p.mu.Lock()
	p.sizes[key] = stored
	p.mu.Unlock()
}

// stored returns the stored size of a block dest holds.
func (p *present) stored(key string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sizes[key]
}

// indexOf is the block index of a backup of slices whose blocks p holds.
func (p *present) indexOf(slices_ map[meta.SliceID]uint32) []indexEntry {
	ids := make([]meta.SliceID, 0, len(slices_))
	for id := range slices_ {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]indexEntry, 0, len(ids))
	bs := p.f.BlockSize
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		e := indexEntry{id: id, size: slices_[id]}
		for i := range data.BlockCount(bs, e.size) {
			e.stored = append(e.stored, p.sizes[data.BlockKey(id, i, data.BlockLen(bs, e.size, i))])
		}
		out = append(out, e)
	}
	return out
}

// writeIndex writes backup name's block index: the magic, the block
// size, then per slice, by id, the id's difference from the last one,
// the slice's size and its blocks' stored sizes, all uvarints;
// zstd-compressed.
func writeIndex(ctx context.Context, dest object.Store, name string, blockSize int, entries []indexEntry) error {
	var buf bytes.Buffer
	zw, err := backup.Compress(&buf, indexFile)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(zw)
	bw.WriteString(indexMagic)
	tmp := binary.AppendUvarint(nil, uint64(blockSize))
	var last meta.SliceID
	for _, e := range entries {
		tmp = binary.AppendUvarint(tmp, uint64(e.id-last))
		tmp = binary.AppendUvarint(tmp, uint64(e.size))
		for _, s := range e.stored {
			tmp = binary.AppendUvarint(tmp, uint64(s))
		}
		bw.Write(tmp)
		tmp, last = tmp[:0], e.id
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return dest.Put(ctx, indexKey(name), bytes.NewReader(buf.Bytes()), int64(buf.Len()))
}

// errBadIndex is a block index that does not parse.
var errBadIndex = errors.New("not a block index")

// readIndex reads backup name's block index: block key → stored size.
func readIndex(ctx context.Context, dest object.Store, name string) (map[string]int64, error) {
	rc, err := dest.Get(ctx, indexKey(name), 0, -1)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	plain, err := backup.Decompress(rc)
	if err != nil {
		return nil, err
	}
	defer plain.Close()
	br := bufio.NewReaderSize(plain, 64<<10)
	head := make([]byte, len(indexMagic))
	if _, err := io.ReadFull(br, head); err != nil || string(head) != indexMagic {
		return nil, fmt.Errorf("%s: %w", indexKey(name), errBadIndex)
	}
	bs, err := binary.ReadUvarint(br)
	if err != nil || bs == 0 || bs > 1<<30 {
		return nil, fmt.Errorf("%s: %w: block size %d", indexKey(name), errBadIndex, bs)
	}
	out := map[string]int64{}
	var id uint64
	for {
		delta, err := binary.ReadUvarint(br)
		if err == io.EOF {
			return out, nil
		}
		size, err2 := binary.ReadUvarint(br)
		if err = errors.Join(err, err2); err != nil || size > 1<<32-1 {
			return nil, fmt.Errorf("%s: %w: %v", indexKey(name), errBadIndex, err)
		}
		id += delta
		for i := range data.BlockCount(int(bs), uint32(size)) {
			stored, err := binary.ReadUvarint(br)
			if err != nil {
				return nil, fmt.Errorf("%s: %w: %v", indexKey(name), errBadIndex, err)
			}
			out[data.BlockKey(meta.SliceID(id), i, data.BlockLen(int(bs), uint32(size), i))] = int64(stored)
		}
	}
}
