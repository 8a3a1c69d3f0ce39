package archive

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"os"

	"github.com/klauspost/compress/zstd"

	"shoal/internal/backup"
	"shoal/internal/meta"
)

// tempDump is the tree dump being written, zstd-compressed (which
// backup.Decompress reads), to a temporary file, with its size and
// checksum.
type tempDump struct {
	f  *os.File
	h  hash.Hash
	n  *backup.Counter
	zw io.WriteCloser
}

func newTempDump() (*tempDump, error) {
	f, err := os.CreateTemp("", "shoal-backup-*.dump.zst")
	if err != nil {
		return nil, err
	}
	// Unlinked at once: only the open file holds it, so a process killed
	// mid-backup leaves nothing behind.
	os.Remove(f.Name())
	return &tempDump{f: f}, nil
}

// begin starts the dump again, empty, and returns where to write it:
// what an earlier attempt wrote is dropped.
func (d *tempDump) begin() (io.Writer, error) {
	if d.zw != nil {
		d.zw.Close()
		d.zw = nil
	}
	if err := d.f.Truncate(0); err != nil {
		return nil, err
	}
	if _, err := d.f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	d.h, d.n = sha256.New(), &backup.Counter{}
	// zstd's fastest level: a live dump is compressed while the tree is
	// read (and, on Redis, while writers wait), so time counts more than
	// a few percent of size.
	zw, err := zstd.NewWriter(d.n.Writer(io.MultiWriter(d.f, d.h)), zstd.WithEncoderCRC(true),
		zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest))
	d.zw = zw
	return zw, err
}

// finish ends the dump and records it, with what out says it holds, in m.
func (d *tempDump) finish(m *Manifest, out meta.TreeDump) error {
	err := d.zw.Close()
	d.zw = nil
	if err != nil {
		return err
	}
	m.Inodes, m.Bytes = out.Inodes, out.Bytes
	m.DumpSize, m.DumpSHA256 = d.n.Count(), hex.EncodeToString(d.h.Sum(nil))
	return nil
}

// reader returns the finished dump, from its start.
func (d *tempDump) reader() (io.Reader, error) {
	_, err := d.f.Seek(0, io.SeekStart)
	return d.f, err
}

// remove drops the dump (its file was unlinked when made).
func (d *tempDump) remove() { d.f.Close() }
