package cli

import (
	"errors"
	"testing"
)

func TestUserMessage(t *testing.T) {
	for in, want := range map[string]string{
		"sqlkv: cannot connect to PostgreSQL":                "cannot connect to PostgreSQL",
		"no volume at x: kvmeta: load: volume not formatted": "no volume at x: load: volume not formatted",
		"sqlkv: kvmeta: nested":                              "nested",
		"refusing (s3store: bucket gone)":                    "refusing (bucket gone)",
		"gc: refusing to delete from a volume: shared":       "gc: refusing to delete from a volume: shared",
		"fsck: check without reading data: --no-verify":      "fsck: check without reading data: --no-verify",
	} {
		if got := userMessage(errors.New(in)); got != want {
			t.Errorf("userMessage(%q) = %q, want %q", in, got, want)
		}
	}
}
