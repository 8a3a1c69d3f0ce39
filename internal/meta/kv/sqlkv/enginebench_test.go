package sqlkv_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"shoal/internal/meta"
	"shoal/internal/meta/kv/sqlkv"
	"shoal/internal/meta/kvmeta"
)

// BenchmarkSQLiteParallelCreate runs the engine's creates from four
// goroutines, each in a directory of its own (bench/peers.sh's four
// parallel creators without FUSE), with group commit on and off.
func BenchmarkSQLiteParallelCreate(b *testing.B) {
	for _, grouped := range []bool{true, false} {
		name := "alone"
		if grouped {
			name = "grouped"
		}
		b.Run(name, func(b *testing.B) {
			ctx := meta.WithCred(context.Background(), meta.Cred{Uid: 1000, Gid: 1000, Trusted: true})
			store, err := sqlkv.Open(ctx, "sqlite://"+filepath.Join(b.TempDir(), "meta.db"))
			if err != nil {
				b.Fatal(err)
			}
			if !grouped {
				sqlkv.NoGroupCommit(store)
			}
			e := kvmeta.New(store, kvmeta.Options{})
			defer e.Close()
			e.SetOpenCheck(func(meta.Ino) bool { return false })
			if err := e.Format(ctx, meta.Format{Name: "bench"}, false); err != nil {
				b.Fatal(err)
			}
			var dirs [4]meta.Ino
			for i := range dirs {
				d, err := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: fmt.Sprint("d", i), Type: meta.TypeDir, Mode: 0o755})
				if err != nil {
					b.Fatal(err)
				}
				dirs[i] = d.Ino
			}
			var seq, worker atomic.Int64
			b.SetParallelism(2) // 4 goroutines on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				dir := dirs[worker.Add(1)%4]
				for pb.Next() {
					n := seq.Add(1)
					if _, err := e.Mknod(ctx, meta.MknodRequest{Parent: dir, Name: fmt.Sprint("f", n), Type: meta.TypeFile, Mode: 0o644, Exclusive: true}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
