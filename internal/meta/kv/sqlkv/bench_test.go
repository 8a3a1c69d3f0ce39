package sqlkv

import (
	"context"
	"encoding/binary"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"shoal/internal/meta/kv"
	"shoal/internal/meta/kv/kvtest"
)

// benchKeys preloads n small keys and returns their names.
func benchKeys(b *testing.B, s kv.Store, n int) [][]byte {
	keys := make([][]byte, n)
	err := s.Txn(context.Background(), func(tx kv.Tx) error {
		for i := range keys {
			keys[i] = binary.BigEndian.AppendUint64([]byte{'i'}, uint64(i))
			tx.Set(keys[i], make([]byte, 100))
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return keys
}

// BenchmarkSQLiteTxnGetSet is the shape of a small metadata operation: a
// read-modify-write of one key in its own transaction.
func BenchmarkSQLiteTxnGetSet(b *testing.B) {
	s := openSQLite(b)
	defer s.Close()
	keys := benchKeys(b, s, 1000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := keys[i%len(keys)]
		err := s.Txn(ctx, func(tx kv.Tx) error {
			v, err := tx.Get(k)
			tx.Set(k, v)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSQLiteViewGet is a stat: one point read in a View.
func BenchmarkSQLiteViewGet(b *testing.B) {
	s := openSQLite(b)
	defer s.Close()
	keys := benchKeys(b, s, 1000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		err := s.View(ctx, func(tx kv.Tx) error {
			_, err := tx.Get(keys[i%len(keys)])
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPostgresTxnGetSet is BenchmarkSQLiteTxnGetSet on PostgreSQL.
func BenchmarkPostgresTxnGetSet(b *testing.B) {
	s := openPG(b)
	defer s.Close()
	keys := benchKeys(b, s, 1000)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := keys[i%len(keys)]
		err := s.Txn(ctx, func(tx kv.Tx) error {
			v, err := tx.Get(k)
			tx.Set(k, v)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPostgresTxnCreateShape is the shape of a create: two reads,
// then four writes.
func BenchmarkPostgresTxnCreateShape(b *testing.B) {
	s := openPG(b)
	defer s.Close()
	keys := benchKeys(b, s, 1000)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		err := s.Txn(ctx, func(tx kv.Tx) error {
			for j := 0; j < 2; j++ {
				if _, err := tx.Get(keys[(i+j)%len(keys)]); err != nil {
					return err
				}
			}
			for j := 2; j < 6; j++ {
				tx.Set(keys[(i+j*100)%len(keys)], []byte("value"))
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPostgresCreateShapeSlowLink is CreateShape over a link adding
// 1 ms per client write, so round trips dominate and noise does not.
func BenchmarkPostgresCreateShapeSlowLink(b *testing.B) {
	u, err := url.Parse(pgSchemaURL(b))
	if err != nil {
		b.Fatal(err)
	}
	p := kvtest.NewProxy(b, u.Host)
	u.Host = p.Addr()
	s, err := Open(context.Background(), u.String())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	keys := benchKeys(b, s, 100)
	p.SetLatency(time.Millisecond)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		err := s.Txn(ctx, func(tx kv.Tx) error {
			for j := 0; j < 2; j++ {
				if _, err := tx.Get(keys[(i+j)%len(keys)]); err != nil {
					return err
				}
			}
			for j := 2; j < 6; j++ {
				tx.Set(keys[(i+j*10)%len(keys)], []byte("value"))
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSQLiteTxnParallel is the shape of concurrent creates in one
// directory (read the directory's attributes, write them, an entry and an
// inode) from several goroutines, committed in groups or one by one.
func BenchmarkSQLiteTxnParallel(b *testing.B) {
	for _, grouped := range []bool{true, false} {
		name := "alone"
		if grouped {
			name = "grouped"
		}
		b.Run(name, func(b *testing.B) {
			s := openSQLite(b).(*Store)
			defer s.Close()
			if !grouped {
				s.group = nil
			}
			dir := []byte("Adir")
			var seq atomic.Uint64
			ctx := context.Background()
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := seq.Add(1)
					err := s.Txn(ctx, func(tx kv.Tx) error {
						if _, err := tx.Get(dir); err != nil {
							return err
						}
						tx.Set(dir, binary.BigEndian.AppendUint64(make([]byte, 0, 100), n))
						tx.Set(binary.BigEndian.AppendUint64([]byte("Ddir/"), n), make([]byte, 16))
						tx.Set(binary.BigEndian.AppendUint64([]byte("I"), n), make([]byte, 90))
						return nil
					})
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
			if s.group != nil {
				b.ReportMetric(float64(s.group.grouped.Load())/float64(b.N), "grouped/op")
			}
		})
	}
}
