package rediskv

import (
	"context"
	"encoding/binary"
	"net/url"
	"testing"
	"time"

	"shoal/internal/meta/kv"
	"shoal/internal/meta/kv/kvtest"
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

// BenchmarkRedisSlowLink runs a one-key View and a read-modify-write Txn
// over a link adding 1 ms per client write, so round trips dominate.
func BenchmarkRedisSlowLink(b *testing.B) {
	u, err := url.Parse(redisNamespaceURL(b))
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
	p.SetLatency(time.Millisecond)
	ctx := context.Background()
	k := []byte("i12345678")
	b.Run("ViewGet", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := s.View(ctx, func(tx kv.Tx) error { _, err := tx.Get(k); return err }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("TxnGetSet", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := s.Txn(ctx, func(tx kv.Tx) error { v, err := tx.Get(k); tx.Set(k, append(v, 'x')[:1]); return err }); err != nil {
				b.Fatal(err)
			}
		}
	})
}
