package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"

	"shoal/internal/backup"
	"shoal/internal/meta"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/object"
	"shoal/internal/progress"
	"shoal/internal/volume"
)

// ErrDumpDamaged is returned when a backup's dump is missing or does not
// match its manifest's checksum.
var ErrDumpDamaged = errors.New("the backup's dump is damaged")

// Report is what Verify found.
type Report struct {
	Name    string   `json:"name"`
	Blocks  int64    `json:"blocks"`  // blocks the dump references
	Read    int64    `json:"read"`    // read back and verified
	Missing []string `json:"missing"` // keys absent
	// Corrupt lists blocks present but of a wrong size or failing their
	// checksum (or seal), one "key: why" each.
	Corrupt []string `json:"corrupt"`
	// Dump says what is wrong with the dump ("" if nothing).
	Dump string `json:"dump,omitempty"`
}

// Damaged reports whether the backup cannot be restored whole.
func (r *Report) Damaged() bool { return len(r.Missing) > 0 || len(r.Corrupt) > 0 || r.Dump != "" }

// fetchDump reads backup m's dump into a temporary file (the caller
// removes it) and checks it against the manifest's checksum.
func fetchDump(ctx context.Context, dest object.Store, m Manifest, secret volume.Secret) (*os.File, error) {
	dumps, err := dumpStore(dest, m.Format, secret)
	if err != nil {
		return nil, err
	}
	rc, err := dumps.Get(ctx, m.Dump, 0, -1)
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s: %v", ErrDumpDamaged, m.Dump, err)
	}
	defer rc.Close()
	tmp, err := os.CreateTemp("", "shoal-restore-*.dump.zst")
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(tmp, h), rc)
	if err == nil {
		if sum := hex.EncodeToString(h.Sum(nil)); sum != m.DumpSHA256 {
			err = fmt.Errorf("%w: %s has SHA-256 %s, the manifest says %s", ErrDumpDamaged, m.Dump, sum, m.DumpSHA256)
		}
	} else {
		err = fmt.Errorf("%w: reading %s: %v", ErrDumpDamaged, m.Dump, err)
	}
	if err == nil {
		_, err = tmp.Seek(0, io.SeekStart)
	}
	if err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	return tmp, nil
}

// dumpSlices lists the slices a fetched dump references, and rewinds it.
func dumpSlices(f *os.File) (meta.Format, map[meta.SliceID]uint32, error) {
	plain, err := backup.Decompress(f)
	if err != nil {
		return meta.Format{}, nil, err
	}
	vf, slices, err := kvmeta.DumpSlices(plain)
	plain.Close()
	if err != nil {
		return vf, nil, fmt.Errorf("%w: %v", ErrDumpDamaged, err)
	}
	_, err = f.Seek(0, io.SeekStart)
	return vf, slices, err
}

// Verify checks backup m: its dump against the manifest's checksum, and
// every block the dump references: present, of a stored size its format
// allows, and read back whole through the volume's block wrappers
// (checksums, compression, seal), jobs at a time. Damage goes in the
// report; the error is for failures to check.
func Verify(ctx context.Context, dest object.Store, m Manifest, secret volume.Secret, jobs int, p *progress.Progress) (*Report, error) {
	if p == nil {
		p = &progress.Progress{}
	}
	r := &Report{Name: m.Name}
	p.Set("reading the dump", 0, 0)
	key, err := volume.DataKey(m.Format, secret)
	if err != nil {
		return r, err
	}
	f, err := fetchDump(ctx, dest, m, secret)
	if errors.Is(err, ErrDumpDamaged) {
		r.Dump = err.Error()
		return r, nil
	}
	if err != nil {
		return r, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	_, slices, err := dumpSlices(f)
	if err != nil {
		r.Dump = err.Error()
		return r, nil
	}
	blocks := blocksOf(slices, m.Format.BlockSize)
	r.Blocks = int64(len(blocks))
	p.Set("listing blocks", 0, 0)
	present, err := listBlocks(ctx, dest)
	if err != nil {
		return r, err
	}
	sizeOK := volume.StoredSizeOK(m.Format)
	var toRead []block
	for _, b := range blocks {
		stored, ok := present[b.key]
		switch {
		case !ok:
			r.Missing = append(r.Missing, b.key)
		case !sizeOK(stored, int64(b.size)):
			r.Corrupt = append(r.Corrupt, fmt.Sprintf("%s: stored %d bytes, which no stored form of a %d-byte block takes", b.key, stored, b.size))
		default:
			toRead = append(toRead, b)
		}
	}
	reader, err := volume.BlockStore(dest, m.Format, key)
	if err != nil {
		return r, err
	}
	p.Set("reading blocks", 0, int64(len(toRead)))
	var mu sync.Mutex
	err = parallel(ctx, toRead, jobs, func(ctx context.Context, b block) error {
		why := readBlock(ctx, reader, b)
		mu.Lock()
		defer mu.Unlock()
		if why != "" {
			r.Corrupt = append(r.Corrupt, b.key+": "+why)
		}
		r.Read++
		p.Add(1)
		return ctx.Err()
	})
	sort.Strings(r.Corrupt)
	return r, err
}

// readBlock reads block b whole and says what is wrong with it ("" if
// nothing).
func readBlock(ctx context.Context, s object.Store, b block) string {
	rc, err := s.Get(ctx, b.key, 0, -1)
	if err != nil {
		return err.Error()
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, rc)
	switch {
	case err != nil:
		return err.Error()
	case n != int64(b.size):
		return fmt.Sprintf("holds %d bytes, want %d", n, b.size)
	}
	return ""
}
