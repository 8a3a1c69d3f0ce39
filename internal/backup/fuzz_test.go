package backup_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"shoal/internal/backup"
	"shoal/internal/meta"
	"shoal/internal/meta/kv/memkv"
	"shoal/internal/meta/kvmeta"
)

// FuzzLoadDump feeds arbitrary bytes to the dump loader, as `shoal load`
// reads a file: Decompress, then the engine's Restore into an empty
// engine. A malformed dump must be an error, never a panic; a dump that
// loads must then survive what a mount and fsck do first (load the
// format, stat and list the root, check the metadata) without a panic.
// scripts/test.sh runs it for a few seconds ("fuzz" step).
func FuzzLoadDump(f *testing.F) {
	t := &testing.T{}
	plain := dump(t, newEngine(t, true))
	f.Add([]byte(plain))
	for _, name := range []string{"d.zst", "d.gz"} {
		var b bytes.Buffer
		w, _ := backup.Compress(&b, name)
		_, _ = io.WriteString(w, plain)
		_ = w.Close()
		f.Add(b.Bytes())
	}
	f.Add([]byte(`{"shoal_dump":1,"format":2}` + "\n" + `{"k":"Rg==","v":"e30="}` + "\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		ctx := context.Background()
		eng := kvmeta.New(memkv.New(), kvmeta.Options{})
		defer eng.Close()
		rc, err := backup.Decompress(bytes.NewReader(in))
		if err != nil {
			return
		}
		defer rc.Close()
		if err := eng.Restore(ctx, io.LimitReader(rc, 4<<20)); err != nil {
			return
		}
		if _, err := eng.Load(ctx); err != nil {
			return
		}
		_, _ = eng.Getattr(ctx, meta.RootIno)
		_, _ = eng.Readdir(ctx, meta.RootIno, "", 100, true)
		_, _ = eng.Check(ctx, false)
	})
}
