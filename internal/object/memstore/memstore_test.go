package memstore

import (
	"testing"

	"shoal/internal/object"
	"shoal/internal/object/objecttest"
)

func TestConformance(t *testing.T) {
	objecttest.Run(t, func(t *testing.T) object.Store { return New() })
}
