package rediskv

import (
	"context"
	"encoding/binary"
	"testing"

	"shoal/internal/meta/kv"
)

// BenchmarkRedisTxnGetSet is a small metadata operation: read-modify-write
// of one key in its own transaction (WATCH+GET, then MULTI/EVAL/EXEC).
func BenchmarkRedisTxnGetSet(b *testing.B) {
	s := openRedis(b)
	defer s.Close()
	ctx := context.Background()
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = binary.BigEndian.AppendUint64([]byte{'i'}, uint64(i))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := keys[i%len(keys)]
		err := s.Txn(ctx, func(tx kv.Tx) error {
			v, err := tx.Get(k)
			tx.Set(k, append(v, 'x')[:1])
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRedisViewGet is a stat: one point read in a View.
func BenchmarkRedisViewGet(b *testing.B) {
	s := openRedis(b)
	defer s.Close()
	ctx := context.Background()
	k := []byte("i12345678")
	for i := 0; i < b.N; i++ {
		err := s.View(ctx, func(tx kv.Tx) error {
			_, err := tx.Get(k)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
