package sqlkv

import (
	"context"
	"encoding/binary"
	"testing"

	"shoal/internal/meta/kv"
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
