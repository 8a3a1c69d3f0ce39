package memkv_test

import (
	"testing"

	"shoal/internal/meta/kv"
	"shoal/internal/meta/kv/kvtest"
	"shoal/internal/meta/kv/memkv"
)

func TestConformance(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kv.Store { return memkv.New() })
}
