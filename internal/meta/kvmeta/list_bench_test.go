package kvmeta_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"shoal/internal/meta"
	"shoal/internal/meta/kv/sqlkv"
	"shoal/internal/meta/kvmeta"
)

// benchListing lists a directory of 20,000 empty files the way the vfs
// does for a plain listing (pages of 8192 names) and reports the time per
// entry.
func benchListing(b *testing.B, e meta.Engine) {
	ctx := meta.WithCred(context.Background(), meta.Cred{Uid: 0, Gid: 0, Trusted: true})
	if err := e.Format(ctx, meta.Format{Name: "bench"}, false); err != nil {
		b.Fatal(err)
	}
	dir, err := e.Mknod(ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "d", Type: meta.TypeDir, Mode: 0o755})
	if err != nil {
		b.Fatal(err)
	}
	const n = 20000
	for i := range n {
		if _, err := e.Mknod(ctx, meta.MknodRequest{Parent: dir.Ino, Name: fmt.Sprint(i), Type: meta.TypeFile, Mode: 0o644}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	for range b.N {
		after, total := "", 0
		for {
			page, err := e.Readdir(ctx, dir.Ino, after, 8192, false)
			if err != nil {
				b.Fatal(err)
			}
			total += len(page)
			if len(page) < 8192 {
				break
			}
			after = page[len(page)-1].Name
		}
		if total != n {
			b.Fatalf("listed %d", total)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
	// The process's CPU time: the engine's cost whatever else the machine
	// runs (for SQLite, all of it is in this process).
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N*n), "cpu-ns/entry")
}

// cpuTime is the CPU time this process used, in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func BenchmarkListingSQLite(b *testing.B) {
	store, err := sqlkv.Open(context.Background(), "sqlite://"+filepath.Join(b.TempDir(), "meta.db"))
	if err != nil {
		b.Fatal(err)
	}
	e := kvmeta.New(store, kvmeta.Options{})
	defer e.Close()
	benchListing(b, e)
}

func BenchmarkListingRedis(b *testing.B) {
	base := os.Getenv("SHOAL_TEST_REDIS")
	if base == "" {
		b.Skip("SHOAL_TEST_REDIS not set")
	}
	e := openRedisOptions(b, redisNamespace(b, base), kvmeta.Options{})
	defer e.Close()
	benchListing(b, e)
}
