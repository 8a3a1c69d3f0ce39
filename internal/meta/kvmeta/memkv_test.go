package kvmeta_test

import (
	"testing"
	"time"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
	"shoal/internal/meta/kv/memkv"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/meta/metatest"
)

func TestMemKV(t *testing.T) {
	metatest.Run(t, func(t *testing.T) meta.Engine {
		return kvmeta.New(memkv.New(), kvmeta.Options{})
	})
}

// sharedStore lets several engines use one in-memory store: their Close
// leaves it open.
type sharedStore struct{ kv.Store }

func (sharedStore) Close() error { return nil }

func TestMemKVClients(t *testing.T) {
	metatest.RunClients(t, func(t *testing.T, n int) []meta.Engine {
		store := memkv.New()
		t.Cleanup(func() { _ = store.Close() })
		engines := make([]meta.Engine, n)
		for i := range engines {
			engines[i] = kvmeta.New(sharedStore{store}, kvmeta.Options{})
		}
		return engines
	})
}

func TestMemKVClock(t *testing.T) {
	metatest.RunClock(t, func(t *testing.T, skews []time.Duration) []meta.Engine {
		store := memkv.New()
		t.Cleanup(func() { _ = store.Close() })
		engines := make([]meta.Engine, len(skews))
		for i, skew := range skews {
			engines[i] = kvmeta.New(sharedStore{store}, kvmeta.Options{ClockSkew: skew})
		}
		return engines
	})
}
