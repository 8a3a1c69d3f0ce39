package kvmeta_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"shoal/internal/meta"
	"shoal/internal/meta/kv/sqlkv"
	"shoal/internal/meta/kvmeta"
)

func BenchmarkCycleSession(b *testing.B) {
	ctx := meta.WithCred(context.Background(), meta.Cred{Uid: 1000, Gid: 1000, Trusted: true})
	store, err := sqlkv.Open(ctx, "sqlite://"+filepath.Join(b.TempDir(), "meta.db"))
	if err != nil {
		b.Fatal(err)
	}
	e := kvmeta.New(store, kvmeta.Options{})
	defer e.Close()
	e.SetOpenCheck(func(meta.Ino) bool { return false })
	if err := e.Format(ctx, meta.Format{Name: "bench"}, false); err != nil {
		b.Fatal(err)
	}
	if _, err := e.BeginSession(ctx, meta.SessionInfo{Host: "x"}); err != nil {
		b.Fatal(err)
	}
	dir, _ := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "d", Type: meta.TypeDir, Mode: 0o755})
	b.ResetTimer()
	for i := range b.N {
		ent, err := e.Mknod(ctx, meta.MknodRequest{Parent: dir.Ino, Name: fmt.Sprint("f", i), Type: meta.TypeFile, Mode: 0o644, Exclusive: true, Open: true})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.Getattr(ctx, ent.Ino); err != nil {
			b.Fatal(err)
		}
		_ = e.Release(ctx, ent.Ino)
		if _, err := e.Unlink(ctx, dir.Ino, fmt.Sprint("f", i)); err != nil {
			b.Fatal(err)
		}
	}
}
