package rediskv

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/redis/go-redis/v9"

	"shoal/internal/meta/kv"
)

// BenchmarkRedisListing lists a directory-like range of 20,000 keys the
// way kvmeta's Readdir does for a plain listing: pages of 8192 names, each
// one View of PrefetchScan and Scan (bigAhead after the first page's
// probe). It reports the time per entry.
func BenchmarkRedisListing(b *testing.B) {
	s := openRedis(b)
	defer s.Close()
	ctx := context.Background()
	const n = 20000
	prefix := []byte("D\x00\x00\x00\x00\x00\x00\x00\x07")
	for lo := 0; lo < n; lo += 2000 {
		err := s.Txn(ctx, func(tx kv.Tx) error {
			for i := lo; i < min(lo+2000, n); i++ {
				v := binary.BigEndian.AppendUint64(nil, uint64(1000+i))
				tx.Set(append(append([]byte{}, prefix...), fmt.Sprint(i)...), append(v, 1))
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	dir := []byte("A\x00\x00\x00\x00\x00\x00\x00\x07")
	b.ResetTimer()
	for range b.N {
		after, total := "", 0
		for {
			got := 0
			err := s.View(ctx, func(tx kv.Tx) error {
				got = 0
				a := kv.ScanAhead{Prefix: prefix, After: []byte(after), Limit: 8192}
				if err := kv.PrefetchScan(tx, a, dir); err != nil {
					return err
				}
				if _, err := tx.Get(dir); err != nil {
					return err
				}
				return tx.Scan(prefix, []byte(after), 8192, func(k, v []byte) bool {
					got++
					after = string(k[len(prefix):])
					return true
				})
			})
			if err != nil {
				b.Fatal(err)
			}
			total += got
			if got < 8192 {
				break
			}
		}
		if total != n {
			b.Fatalf("listed %d", total)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
}

// BenchmarkRedisHashListing is JuiceFS's way, for comparison: the names and
// values of one hash of 20,000 fields, by HSCAN with COUNT 10000.
func BenchmarkRedisHashListing(b *testing.B) {
	opts, err := redis.ParseURL(redisBase(b))
	if err != nil {
		b.Fatal(err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx := context.Background()
	const n = 20000
	key := fmt.Sprintf("{kvtest_hash_%x}", rand.Uint64())
	defer c.Del(ctx, key)
	fields := make([]any, 0, 2*n)
	for i := range n {
		v := binary.BigEndian.AppendUint64(nil, uint64(1000+i))
		fields = append(fields, fmt.Sprint(i), string(append(v, 1)))
	}
	if err := c.HSet(ctx, key, fields...).Err(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		var cursor uint64
		total := 0
		for {
			kvs, next, err := c.HScan(ctx, key, cursor, "*", 10000).Result()
			if err != nil {
				b.Fatal(err)
			}
			total += len(kvs) / 2
			if cursor = next; cursor == 0 {
				break
			}
		}
		if total < n {
			b.Fatalf("listed %d", total)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
}
