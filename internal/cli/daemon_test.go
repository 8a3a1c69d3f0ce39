package cli

import (
	"strings"
	"testing"
)

// TestChildArgsCarryNoPassword: the background child gets the URL's
// password apart from its argv (which its environment then carries).
func TestChildArgsCarryNoPassword(t *testing.T) {
	url := "postgres://shoal:Chi1dSecret@db:5432/shoal?sslmode=disable"
	args, pw := childArgs([]string{"mount", "--background", url, "/mnt/x"}, url, "/tmp/log")
	if pw != "Chi1dSecret" {
		t.Fatalf("password = %q", pw)
	}
	joined := strings.Join(args, " ")
	if strings.Contains(joined, "Chi1dSecret") || strings.Contains(joined, "--background") {
		t.Fatalf("child argv %q", joined)
	}
	if want := "mount postgres://shoal@db:5432/shoal?sslmode=disable /mnt/x --log /tmp/log"; joined != want {
		t.Fatalf("child argv %q, want %q", joined, want)
	}
}
