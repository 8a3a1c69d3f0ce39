package sqlkv

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"shoal/internal/meta/kv"
)

// TestSQLiteSyncCheckpointsWAL checks that Sync moves committed frames out
// of the WAL into the synced database file.
func TestSQLiteSyncCheckpointsWAL(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "meta.db")
	st, err := Open(ctx, "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	before, _ := os.Stat(path)
	err = st.Txn(ctx, func(tx kv.Tx) error {
		for i := 0; i < 200; i++ {
			tx.Set([]byte{byte(i), 1, 2, 3}, make([]byte, 1000))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.(kv.Syncer).Sync(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() <= before.Size() {
		t.Fatalf("database file did not grow after Sync (%d -> %d): WAL not checkpointed", before.Size(), after.Size())
	}
}
