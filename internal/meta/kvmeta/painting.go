package kvmeta

import (
	"sort"

	"shoal/internal/meta"
)

// paintBlock is the most pieces one block of a painting holds.
const paintBlock = 128

// painting is the resolved view of a whole chunk (consecutive pieces from 0
// to meta.ChunkSize, holes with ID 0), kept with its list in the chunk
// cache to count allocated bytes. It is stored in blocks of at most
// paintBlock pieces and never changed: paint returns a new painting that
// shares every block the added records do not touch. A commit of a few
// records to a chunk of k pieces therefore costs a few blocks and k/128
// block pointers, where one flat array cost a copy of all k pieces (with
// lists of 17,000 records after random writes, a quarter of the CPU of a
// parallel random-write load went to those copies).
type painting struct {
	blocks [][]meta.Slice // non-empty, in position order
	pieces int
}

// newPainting cuts pieces (a whole chunk's, in order) into blocks.
func newPainting(pieces []meta.Slice) *painting {
	p := &painting{pieces: len(pieces)}
	p.blocks = appendBlocks(nil, pieces)
	return p
}

// appendBlocks appends pieces to blocks in blocks of at most paintBlock.
func appendBlocks(blocks [][]meta.Slice, pieces []meta.Slice) [][]meta.Slice {
	for len(pieces) > 0 {
		n := min(len(pieces), paintBlock)
		blocks = append(blocks, pieces[:n:n])
		pieces = pieces[n:]
	}
	return blocks
}

// size is the number of pieces (0 for no painting), for the cache's bound.
func (p *painting) size() int {
	if p == nil {
		return 0
	}
	return p.pieces
}

// paint paints added (in order) over p and returns the new painting and
// the change of its data bytes. The blocks under each window of added
// records are joined and repainted (paintAdded); the rest are shared.
func (p *painting) paint(added []meta.Slice) (*painting, int64) {
	type span struct{ i, j int } // blocks[i:j]
	var spans []span
	for _, w := range windows(added) {
		i := sort.Search(len(p.blocks), func(x int) bool {
			last := p.blocks[x][len(p.blocks[x])-1]
			return last.Pos+last.Len > w.Pos
		})
		j := sort.Search(len(p.blocks), func(x int) bool { return p.blocks[x][0].Pos >= w.Pos+w.Len })
		if n := len(spans); n > 0 && i < spans[n-1].j {
			spans[n-1].j = max(spans[n-1].j, j)
			continue
		}
		spans = append(spans, span{i, j})
	}
	out := &painting{blocks: make([][]meta.Slice, 0, len(p.blocks)+2*len(spans)), pieces: p.pieces}
	var delta int64
	at := 0
	var joined, mine []meta.Slice
	for _, s := range spans {
		out.blocks = append(out.blocks, p.blocks[at:s.i]...)
		joined = joined[:0]
		for _, b := range p.blocks[s.i:s.j] {
			joined = append(joined, b...)
		}
		lo, hi := joined[0].Pos, joined[len(joined)-1].Pos+joined[len(joined)-1].Len
		mine = mine[:0]
		for _, a := range added {
			if a.Pos < hi && a.Pos+a.Len > lo {
				mine = append(mine, a)
			}
		}
		np, d := paintAdded(joined, mine)
		delta += d
		out.pieces += len(np) - len(joined)
		out.blocks = appendBlocks(out.blocks, np)
		at = s.j
	}
	out.blocks = append(out.blocks, p.blocks[at:]...)
	return out, delta
}
