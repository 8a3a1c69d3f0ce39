package meta

// Resolve paints a chunk's slice list (oldest first) and returns the pieces
// visible in [pos, pos+length): consecutive, non-overlapping slices that
// cover the window exactly, with holes (ID 0) where nothing was written.
// Each piece keeps its slice's ID and Size; Off and Len are narrowed to the
// visible part. Resolve does not modify slices.
//
// Slices are clipped to the window before they are painted, so the cost
// grows with the slices that touch the window, not with the whole list: a
// small read or commit in a chunk of a thousand random writes stays cheap.
func Resolve(slices []Slice, pos, length uint32) []Slice {
	end := pos + length
	var painted []Slice
	for _, s := range slices {
		from, to := max(s.Pos, pos), min(s.Pos+s.Len, end)
		if from < to {
			painted = paint(painted, cut(s, from, to))
		}
	}
	out := make([]Slice, 0, 4)
	at := pos
	for _, p := range painted {
		pEnd := p.Pos + p.Len
		if pEnd <= at || p.Pos >= end {
			continue
		}
		if p.Pos > at {
			out = append(out, Slice{Pos: at, Len: p.Pos - at})
			at = p.Pos
		}
		out = append(out, cut(p, at, min(pEnd, end)))
		at = min(pEnd, end)
	}
	if at < end {
		out = append(out, Slice{Pos: at, Len: end - at})
	}
	return out
}

// paint lays s over the sorted, non-overlapping list painted.
func paint(painted []Slice, s Slice) []Slice {
	sEnd := s.Pos + s.Len
	out := make([]Slice, 0, len(painted)+2)
	inserted := false
	for _, p := range painted {
		pEnd := p.Pos + p.Len
		if pEnd <= s.Pos || p.Pos >= sEnd {
			if !inserted && p.Pos >= sEnd {
				out = append(out, s)
				inserted = true
			}
			out = append(out, p)
			continue
		}
		if p.Pos < s.Pos {
			out = append(out, cut(p, p.Pos, s.Pos))
		}
		if !inserted {
			out = append(out, s)
			inserted = true
		}
		if pEnd > sEnd {
			out = append(out, cut(p, sEnd, pEnd))
		}
	}
	if !inserted {
		out = append(out, s)
	}
	return out
}

// cut narrows s to the chunk range [from, to), which must lie within it.
func cut(s Slice, from, to uint32) Slice {
	if s.ID != 0 {
		s.Off += from - s.Pos
	}
	s.Pos, s.Len = from, to-from
	return s
}

// Extent returns the end of the furthest slice in a chunk list.
func Extent(slices []Slice) uint32 {
	var end uint32
	for _, s := range slices {
		end = max(end, s.Pos+s.Len)
	}
	return end
}
