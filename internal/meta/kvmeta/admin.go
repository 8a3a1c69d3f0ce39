package kvmeta

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
	"shoal/internal/secret"
)

var (
	_ meta.Scanner = (*Engine)(nil)
	_ meta.Dumper  = (*Engine)(nil)
	_ meta.Checker = (*Engine)(nil)
)

// allKinds are the key kinds a dump carries, in the order it writes them.
var allKinds = []byte{kindFormat, kindCounter, kindAttr, kindDentry, kindSymlink,
	kindXattr, kindChunk, kindRefs, kindFreed, kindOrphan,
	kindSession, kindSessionOrphan, kindSessionLock, kindFlock, kindPlock, kindQuota,
	kindOpen, kindSnap}

// Orphans scans the 'O' keys.
func (e *Engine) Orphans(ctx context.Context, limit int) ([]meta.Orphan, error) {
	var out []meta.Orphan
	err := e.view(ctx, func(t *txn) error {
		out = out[:0]
		return t.tx.Scan([]byte{kindOrphan}, nil, limit, func(key, value []byte) bool {
			_, since := decodeOrphan(value)
			out = append(out, meta.Orphan{Ino: meta.Ino(be.Uint64(key[1:])), Since: since})
			return true
		})
	})
	return out, wrap(err, "orphans")
}

// scanBatch is how many inodes ScanSlices reads per transaction.
const scanBatch = 256

// ScanSlices lists the inodes, then reads their chunks a batch of inodes
// per transaction, calling fn outside the transactions.
func (e *Engine) ScanSlices(ctx context.Context, fn func(ino meta.Ino, index uint32, s meta.Slice) error) error {
	inos, err := e.fileInodes(ctx)
	if err != nil {
		return wrap(err, "scan slices")
	}
	type rec struct {
		ino   meta.Ino
		index uint32
		s     meta.Slice
	}
	for len(inos) > 0 {
		batch := inos[:min(scanBatch, len(inos))]
		inos = inos[len(batch):]
		var recs []rec
		err := e.view(ctx, func(t *txn) error {
			recs = recs[:0]
			for _, ino := range batch {
				err := t.eachChunk(ino, func(index uint32, ss []meta.Slice) {
					for _, s := range ss {
						if s.ID != 0 {
							recs = append(recs, rec{ino, index, s})
						}
					}
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return wrap(err, "scan slices")
		}
		for _, r := range recs {
			if err := fn(r.ino, r.index, r.s); err != nil {
				return err
			}
		}
	}
	return nil
}

// fileInodes lists the regular files' inode numbers.
func (e *Engine) fileInodes(ctx context.Context) ([]meta.Ino, error) {
	var inos []meta.Ino
	err := e.view(ctx, func(t *txn) error {
		inos = inos[:0]
		return t.tx.Scan([]byte{kindAttr}, nil, 0, func(key, value []byte) bool {
			if len(value) > 1 && meta.Type(value[1]) == meta.TypeFile {
				inos = append(inos, meta.Ino(be.Uint64(key[1:])))
			}
			return true
		})
	})
	return inos, err
}

// eachChunk calls fn for each chunk of ino, in index order.
func (t *txn) eachChunk(ino meta.Ino, fn func(index uint32, ss []meta.Slice)) error {
	return t.scanChunks(ino, 0, func(index uint32, _ [][]byte, ss []meta.Slice) bool {
		fn(index, ss)
		return true
	})
}

// dumpHeader is the first line of a dump.
type dumpHeader struct {
	Dump   int    `json:"shoal_dump"` // dump format version
	Format int    `json:"format"`     // volume format version of the keys
	Source string `json:"source"`
}

// dumpRecord is one key, one line.
type dumpRecord struct {
	K string `json:"k"`
	V string `json:"v"`
}

// Dump writes a JSON header line, then one JSON line per key, base64
// encoded, kind by kind (one read transaction per kind, held in memory
// while it is written). Usage counters are flushed first.
func (e *Engine) Dump(ctx context.Context, w io.Writer) error {
	if err := e.flushUsage(ctx); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	hdr := dumpHeader{Dump: 1, Format: meta.CurrentFormatVersion, Source: e.Name()}
	if err := enc.Encode(hdr); err != nil {
		return wrap(err, "dump")
	}
	for _, kind := range allKinds {
		var recs []dumpRecord
		err := e.store.View(ctx, func(tx kv.Tx) error {
			recs = recs[:0]
			return tx.Scan([]byte{kind}, nil, 0, func(k, v []byte) bool {
				if kind == kindFormat {
					v = formatWithoutCredentials(v)
				}
				recs = append(recs, dumpRecord{K: base64.StdEncoding.EncodeToString(k), V: base64.StdEncoding.EncodeToString(v)})
				return true
			})
		})
		if err != nil {
			return wrap(err, "dump %c keys", kind)
		}
		for _, r := range recs {
			if err := enc.Encode(r); err != nil {
				return wrap(err, "dump")
			}
		}
	}
	return wrap(bw.Flush(), "dump")
}

// formatWithoutCredentials returns the settings raw with any user info
// (credentials) taken out of the bucket URL, which volumes formatted by
// old versions may carry: a dump must never hold a secret.
func formatWithoutCredentials(raw []byte) []byte {
	var f meta.Format
	if json.Unmarshal(raw, &f) != nil {
		return raw
	}
	bucket, had := secret.StripUserinfo(f.Bucket)
	if !had {
		return raw
	}
	var m map[string]json.RawMessage // keep fields this binary may not know
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	m["bucket"], _ = json.Marshal(bucket)
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}

// restoreBatch is how many keys Restore writes per transaction.
const restoreBatch = 512

// Restore reads a dump into an empty store, a batch of keys per
// transaction. The format key is written last, so an interrupted restore
// leaves an unformatted store that can be wiped and restored again.
// Sessions and locks are skipped (restoredKind).
func (e *Engine) Restore(ctx context.Context, r io.Reader) error {
	return e.RestoreEdited(ctx, r, nil)
}

// RestoreEdited is Restore with the volume settings passed through edit
// (when set) before they are written, last: a backup restored into a
// new bucket gets its new storage and uuid in the same step, so no
// moment exists in which the engine names the source's bucket.
func (e *Engine) RestoreEdited(ctx context.Context, r io.Reader, edit func(*meta.Format) error) error {
	switch _, err := e.Load(ctx); {
	case err == nil:
		return meta.ErrFormatted
	case !errors.Is(err, meta.ErrNotFormatted):
		return err
	}
	dec := json.NewDecoder(bufio.NewReader(r))
	var hdr dumpHeader
	if err := dec.Decode(&hdr); err != nil || hdr.Dump != 1 {
		return wrap(fmt.Errorf("not a shoal dump (header %+v): %v", hdr, err), "restore")
	}
	if hdr.Format > meta.CurrentFormatVersion {
		return meta.ErrNewerFormat
	}
	var formatValue []byte
	batch := make([][2][]byte, 0, restoreBatch)
	for {
		k, v, err := nextRecord(dec)
		if err == io.EOF {
			break
		}
		if err != nil {
			return wrap(err, "restore")
		}
		if len(k) == 1 && k[0] == kindFormat {
			formatValue = v
			continue
		}
		if !restoredKind(k[0]) {
			continue
		}
		if !restorableKey(k) {
			return wrap(fmt.Errorf("dump holds a malformed %q key of %d bytes: the dump is damaged", k[0], len(k)), "restore")
		}
		if batch = append(batch, [2][]byte{k, v}); len(batch) == restoreBatch {
			if err := e.writeBatch(ctx, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if formatValue == nil {
		return wrap(fmt.Errorf("dump has no format record"), "restore")
	}
	if edit != nil {
		var f meta.Format
		if err := json.Unmarshal(formatValue, &f); err != nil {
			return wrap(fmt.Errorf("the dump's format record: %w", err), "restore")
		}
		if err := edit(&f); err != nil {
			return wrap(err, "restore")
		}
		raw, err := json.Marshal(f)
		if err != nil {
			return wrap(err, "restore")
		}
		formatValue = raw
	}
	batch = append(batch, [2][]byte{formatKey(), formatValue})
	if err := e.writeBatch(ctx, batch); err != nil {
		return err
	}
	e.inodes.forget()
	e.slices.forget()
	_, err := e.Load(ctx)
	return err
}

func nextRecord(dec *json.Decoder) (k, v []byte, err error) {
	var rec dumpRecord
	if err := dec.Decode(&rec); err != nil {
		return nil, nil, err
	}
	if k, err = base64.StdEncoding.DecodeString(rec.K); err != nil {
		return nil, nil, err
	}
	if v, err = base64.StdEncoding.DecodeString(rec.V); err != nil {
		return nil, nil, err
	}
	if len(k) == 0 {
		return nil, nil, fmt.Errorf("empty key in dump")
	}
	return k, v, nil
}

func (e *Engine) writeBatch(ctx context.Context, batch [][2][]byte) error {
	err := e.store.Txn(ctx, func(tx kv.Tx) error {
		for _, kv := range batch {
			tx.Set(kv[0], kv[1])
		}
		return nil
	})
	return wrap(err, "restore %d keys", len(batch))
}
