package kvmeta_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"shoal/internal/meta"
	"shoal/internal/meta/kv/sqlkv"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/meta/metatest"
)

func TestSQLite(t *testing.T) {
	metatest.Run(t, func(t *testing.T) meta.Engine {
		return openSQL(t, "sqlite://"+filepath.Join(t.TempDir(), "meta.db"))
	})
}

func TestSQLiteClients(t *testing.T) {
	metatest.RunClients(t, func(t *testing.T, n int) []meta.Engine {
		return openSQLClients(t, "sqlite://"+filepath.Join(t.TempDir(), "meta.db"), n)
	})
}

func TestSQLiteClock(t *testing.T) {
	metatest.RunClock(t, func(t *testing.T, skews []time.Duration) []meta.Engine {
		return openSkewedSQL(t, "sqlite://"+filepath.Join(t.TempDir(), "meta.db"), skews)
	})
}

// openSQL opens an engine over the database url names.
func openSQL(t *testing.T, url string) meta.Engine {
	return openSQLOptions(t, url, kvmeta.Options{})
}

func openSQLOptions(t *testing.T, url string, opts kvmeta.Options) meta.Engine {
	t.Helper()
	store, err := sqlkv.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	return kvmeta.New(store, opts)
}

// openSkewedSQL opens one engine per skew over one database, each with
// its clock off by that much (kvmeta.Options.ClockSkew).
func openSkewedSQL(t *testing.T, url string, skews []time.Duration) []meta.Engine {
	engines := make([]meta.Engine, len(skews))
	for i, skew := range skews {
		engines[i] = openSQLOptions(t, url, kvmeta.Options{ClockSkew: skew})
	}
	return engines
}

// openSQLClients opens n engines over one database, as n mounts.
func openSQLClients(t *testing.T, url string, n int) []meta.Engine {
	engines := make([]meta.Engine, n)
	for i := range engines {
		engines[i] = openSQL(t, url)
	}
	return engines
}
