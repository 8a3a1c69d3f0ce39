package cli

import (
	"errors"
	"testing"
)

// TestUserMessage: the CLI shows secret.Message (more cases in
// internal/secret).
func TestUserMessage(t *testing.T) {
	for in, want := range map[string]string{
		"sqlkv: cannot connect to PostgreSQL":          "cannot connect to PostgreSQL",
		"stats: metrics: parsing a scrape: bad":        "stats: parsing a scrape: bad",
		"gc: refusing to delete from a volume: shared": "gc: refusing to delete from a volume: shared",
	} {
		if got := userMessage(errors.New(in)); got != want {
			t.Errorf("userMessage(%q) = %q, want %q", in, got, want)
		}
	}
}
