package kvmeta_test

import (
	"context"
	"path/filepath"
	"testing"

	"shoal/internal/meta"
	"shoal/internal/meta/kv/sqlkv"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/meta/metatest"
)

func TestSQLite(t *testing.T) {
	metatest.Run(t, func(t *testing.T) meta.Engine {
		store, err := sqlkv.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "meta.db"))
		if err != nil {
			t.Fatalf("open sqlite: %v", err)
		}
		return kvmeta.New(store, kvmeta.Options{})
	})
}
