package volume

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"shoal/internal/meta"
)

// BenchmarkSQLiteEngineOps measures the engine operations behind create,
// stat and unlink on the embedded default, without FUSE.
func BenchmarkSQLiteEngineOps(b *testing.B) {
	ctx := context.Background()
	url := "sqlite://" + filepath.Join(b.TempDir(), "meta.db")
	eng, err := OpenEngine(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	if err := eng.Format(ctx, meta.Format{Name: "b", Version: meta.CurrentFormatVersion, Storage: "file", BlockSize: 4 << 20}, false); err != nil {
		b.Fatal(err)
	}
	made, removed := 0, 0
	b.Run("mknod", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			made++
			if _, err := eng.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: fmt.Sprint("m", made), Type: meta.TypeFile, Mode: 0o644, Exclusive: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lookup", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := eng.Lookup(ctx, meta.RootIno, "m1"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unlink+purge", func(b *testing.B) {
		for i := 0; i < b.N && removed < made; i++ {
			removed++
			r, err := eng.Unlink(ctx, meta.RootIno, fmt.Sprint("m", removed))
			if err != nil {
				b.Fatal(err)
			}
			if err := eng.Purge(ctx, r.Ino); err != nil {
				b.Fatal(err)
			}
		}
	})
}
