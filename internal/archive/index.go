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

// spotChecks is how many blocks of the newest backup's index a backup
// looks up (Head) before it trusts the index.
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
	dest object.Store
	f    meta.Format
	base *Manifest // the newest backup, nil if none
	ok   func(stored, n int64) bool
	mu   sync.Mutex
	// sizes maps block keys to stored sizes; nil until prepare.
	sizes map[string]int64
}

func newPresent(dest object.Store, f meta.Format, base *Manifest) *present {
	return &present{dest: dest, f: f, base: base, ok: volume.StoredSizeOK(f)}
}

// prepare learns what dest holds: the newest backup's index, of which a
// few blocks picked at random are looked up, or, without an index (no
// backup yet, one made before indexes, a damaged index) or when a block
// looked up is missing or of the wrong size, a listing of dest.
func (p *present) prepare(ctx context.Context) error {
	if p.base != nil {
		if sizes, err := readIndex(ctx, p.dest, p.base.Name); err == nil {
			good, err := p.spotCheck(ctx, sizes)
			if err != nil {
				return err
			}
			if good {
				p.sizes = sizes
				return nil
			}
		}
	}
	sizes, err := listBlocks(ctx, p.dest)
	p.sizes = sizes
	return err
}

// spotCheck looks up a few blocks of an index picked at random and
// reports whether all are in dest in the stored size the index says.
func (p *present) spotCheck(ctx context.Context, sizes map[string]int64) (bool, error) {
	keys := make([]string, 0, spotChecks)
	seen := 0
	for k := range sizes { // reservoir sampling: each key as likely
		if seen++; len(keys) < spotChecks {
			keys = append(keys, k)
		} else if j := rand.IntN(seen); j < spotChecks {
			keys[j] = k
		}
	}
	var mu sync.Mutex
	good := true
	err := parallel(ctx, keys, spotChecks, func(ctx context.Context, k string) error {
		info, err := p.dest.Head(ctx, k)
		if err != nil && !errors.Is(err, object.ErrNotExist) {
			return err
		}
		if err != nil || info.Size != sizes[k] {
			mu.Lock()
			good = false
			mu.Unlock()
		}
		return nil
	})
	return good, err
}

// has reports whether dest holds block b in a stored size its format
// allows (after prepare).
func (p *present) has(b block) bool {
	p.mu.Lock()
	stored, ok := p.sizes[b.key]
	p.mu.Unlock()
	return ok && p.ok(stored, int64(b.size))
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
