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

// BenchmarkSQLite measures the hot engine operations on the embedded
// default, as a FUSE mount with default_permissions calls them (trusted
// credentials, the open-file fast path on).
func BenchmarkSQLite(b *testing.B) {
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
	dir, err := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "d", Type: meta.TypeDir, Mode: 0o755})
	if err != nil {
		b.Fatal(err)
	}
	made := 0
	b.Run("create", func(b *testing.B) {
		for range b.N {
			made++
			if _, err := e.Mknod(ctx, meta.MknodRequest{Parent: dir.Ino, Name: fmt.Sprint("f", made), Type: meta.TypeFile, Mode: 0o644, Exclusive: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lookup", func(b *testing.B) {
		for range b.N {
			if _, err := e.Lookup(ctx, dir.Ino, "f1"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("readdirplus-1000", func(b *testing.B) {
		for range b.N {
			if _, err := e.Readdir(ctx, dir.Ino, "", 1000, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	removed := 0
	b.Run("unlink", func(b *testing.B) {
		for i := 0; i < b.N && removed < made; i++ {
			removed++
			if _, err := e.Unlink(ctx, dir.Ino, fmt.Sprint("f", removed)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSQLiteCreateClose measures one file's create (recorded open, as
// the vfs creates), release and unlink on the embedded default with a
// session, so that the cost of open records (open.go) shows.
func BenchmarkSQLiteCreateClose(b *testing.B) {
	ctx := meta.WithCred(context.Background(), meta.Cred{Uid: 1000, Gid: 1000, Trusted: true})
	store, err := sqlkv.Open(ctx, "sqlite://"+filepath.Join(b.TempDir(), "meta.db"))
	if err != nil {
		b.Fatal(err)
	}
	e := kvmeta.New(store, kvmeta.Options{})
	defer e.Close()
	startBench(ctx, b, e)
	b.ResetTimer()
	for i := range b.N {
		name := fmt.Sprint("f", i)
		ent, err := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: name, Type: meta.TypeFile, Mode: 0o644, Exclusive: true, Open: true})
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Release(ctx, ent.Ino); err != nil {
			b.Fatal(err)
		}
		if _, err := e.Unlink(ctx, meta.RootIno, name); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRedisCreateClose measures, on $SHOAL_TEST_REDIS, one file's
// create (recorded open, as the vfs creates) and release in a directory
// this client made, as the kernel sends them for open(O_CREAT|O_EXCL) and
// close: the client's CPU and round trips per create.
func BenchmarkRedisCreateClose(b *testing.B) {
	ctx := meta.WithCred(context.Background(), meta.Cred{Uid: 1000, Gid: 1000, Trusted: true})
	e := openRedisOptions(b, redisNamespace(b, serviceURL(b, "SHOAL_TEST_REDIS")), kvmeta.Options{}).(*kvmeta.Engine)
	defer e.Close()
	startBench(ctx, b, e)
	dir, err := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "d", Type: meta.TypeDir, Mode: 0o755})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		ent, err := e.Mknod(ctx, meta.MknodRequest{Parent: dir.Ino, Name: fmt.Sprint("f", i), Type: meta.TypeFile, Mode: 0o644, Exclusive: true, Open: true})
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Release(ctx, ent.Ino); err != nil {
			b.Fatal(err)
		}
	}
}

// startBench formats a benchmark's volume on e and begins its session;
// no inode counts as open elsewhere.
func startBench(ctx context.Context, b *testing.B, e *kvmeta.Engine) {
	b.Helper()
	e.SetOpenCheck(func(meta.Ino) bool { return false })
	if err := e.Format(ctx, meta.Format{Name: "bench"}, false); err != nil {
		b.Fatal(err)
	}
	if _, err := e.BeginSession(ctx, meta.SessionInfo{Host: "bench"}); err != nil {
		b.Fatal(err)
	}
}
