package secret

import (
	"errors"
	"testing"
)

func TestMessage(t *testing.T) {
	for in, want := range map[string]string{
		"sqlkv: cannot connect to PostgreSQL":                                       "cannot connect to PostgreSQL",
		"no volume at x: kvmeta: reading the volume settings: volume not formatted": "no volume at x: reading the volume settings: volume not formatted",
		"sqlkv: kvmeta: nested":                                                     "nested",
		"refusing (s3store: bucket gone)":                                           "refusing (bucket gone)",
		"gc: refusing to delete from a volume: shared":                              "gc: refusing to delete from a volume: shared",
		"fsck: check without reading data: --no-verify":                             "fsck: check without reading data: --no-verify",
		"stats: metrics: parsing a scrape: bad line":                                "stats: parsing a scrape: bad line",
		"journal: short write":                                                      "short write",
		"takeover: replaying INIT: EOF":                                             "replaying INIT: EOF",
		"rediskv: redis://u:hunter2@h/0 down":                                       "redis://u:xxxxx@h/0 down",
	} {
		if got := Message(errors.New(in)); got != want {
			t.Errorf("Message(%q) = %q, want %q", in, got, want)
		}
	}
}
