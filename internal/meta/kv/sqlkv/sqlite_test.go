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

// TestSQLiteConformance runs the suite with a second store on the same
// file as the peer: its own connections, as another process's would be.
func TestSQLiteConformance(t *testing.T) {
	kvtest.RunURL(t, Open, func(t *testing.T) string {
		return "sqlite://" + filepath.Join(t.TempDir(), "meta.db")
	})
}
