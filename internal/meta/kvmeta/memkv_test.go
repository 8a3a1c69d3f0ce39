package kvmeta_test

import (
	"testing"

	"shoal/internal/meta"
	"shoal/internal/meta/kv/memkv"
	"shoal/internal/meta/kvmeta"
	"shoal/internal/meta/metatest"
)

func TestMemKV(t *testing.T) {
	metatest.Run(t, func(t *testing.T) meta.Engine {
		return kvmeta.New(memkv.New(), kvmeta.Options{})
	})
}
