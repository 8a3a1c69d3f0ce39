package e2e

import (
	"net"
	"strings"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// TestTakenPortExits2: an address another process holds, given to
// --metrics or --console of a mount (foreground and --background) or to
// `shoal console --listen`, refuses the command with exit 2 (docs/cli.md),
// a message naming the flag's address, and no mount left behind.
func TestTakenPortExits2(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	v := testutil.NewVolume(t)
	for _, args := range [][]string{
		{"mount", "--metrics", addr, v.MetaURL, v.Mountpoint},
		{"mount", "--background", "--metrics", addr, v.MetaURL, v.Mountpoint},
		{"mount", "--console", addr, v.MetaURL, v.Mountpoint},
		{"mount", "--background", "--console", addr, v.MetaURL, v.Mountpoint},
		{"console", "--listen", addr, v.MetaURL},
	} {
		cmd := "shoal " + strings.Join(args, " ")
		res := testutil.RunTimeout(t, 30*time.Second, args...)
		if res.Code != 2 || !strings.Contains(res.Stderr, addr) {
			t.Errorf("%s: exit %d, want 2 with the address in the message:\n%s", cmd, res.Code, res.Stderr)
		}
		if m := internalName.FindString(res.Stderr); m != "" {
			t.Errorf("%s: message shows %q:\n%s", cmd, m, res.Stderr)
		}
		if testutil.IsMounted(v.Mountpoint) {
			testutil.Run(t, "umount", v.Mountpoint)
			t.Fatalf("%s left a mount at %s", cmd, v.Mountpoint)
		}
	}
}
