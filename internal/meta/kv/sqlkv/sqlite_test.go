package sqlkv

import (
	"context"
	"path/filepath"
	"testing"

	"shoal/internal/meta/kv"
	"shoal/internal/meta/kv/kvtest"
)

// openSQLite opens a store on a fresh database file in t's temp dir.
func openSQLite(t testing.TB) kv.Store {
	t.Helper()
	s, err := Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestSQLiteConformance(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kv.Store { return openSQLite(t) })
}
