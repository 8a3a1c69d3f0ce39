package rundir

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestNameIsInjective(t *testing.T) {
	cases := map[string]string{
		"/":             "-",
		"/mnt/data":     "mnt-data",
		"/a_b":          "a_b",
		"/a/b":          "a-b",
		"/a-b":          `a\x2db`,
		"/.hidden/x y":  `\x2ehidden-x\x20y`,
		"/srv/v\\x2db/": `srv-v\x5cx2db`,
	}
	seen := map[string]string{}
	for mp, want := range cases {
		got := Name(mp)
		if got != want {
			t.Errorf("Name(%q) = %q, want %q", mp, got, want)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("%q and %q share the name %q", mp, other, got)
		}
		seen[got] = mp
		if se, err := exec.LookPath("systemd-escape"); err == nil {
			out, err := exec.Command(se, "--path", mp).Output()
			if err == nil && strings.TrimSpace(string(out)) != got {
				t.Errorf("systemd-escape --path %q = %q, Name = %q", mp, strings.TrimSpace(string(out)), got)
			}
		}
	}
}

func TestCheckRefusesOpenDirectories(t *testing.T) {
	base := t.TempDir()
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(open, 0o777)
	if err := Check(open); err == nil {
		t.Errorf("a world-writable directory passed")
	}
	link := filepath.Join(base, "link")
	private := filepath.Join(base, "private")
	_ = os.Mkdir(private, 0o700)
	_ = os.Symlink(private, link)
	if err := Check(link); err == nil {
		t.Errorf("a symlink passed")
	}
	if err := Check(private); err != nil {
		t.Errorf("a private directory failed: %v", err)
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(base, "other")
		_ = os.Mkdir(other, 0o700)
		_ = os.Chown(other, 12345, 12345)
		if err := Check(other); err == nil {
			t.Errorf("a directory owned by another user passed")
		}
	}
}

func TestPublicPathOf(t *testing.T) {
	mp := "/mnt/data"
	if p, ok := PublicPathOf(os.Geteuid(), mp, ".metrics"); !ok || p != PublicPath(mp, ".metrics") {
		t.Errorf("the caller's own mount: %q, %v", p, ok)
	}
	if p, ok := PublicPathOf(0, mp, ".metrics"); !ok || p != "/run/shoal-metrics/mnt-data.metrics" {
		t.Errorf("root's mount: %q, %v", p, ok)
	}
	if p, ok := PublicPathOf(os.Geteuid()+12345, mp, ".metrics"); ok {
		t.Errorf("another user's mount: %q, want none", p)
	}
	if os.Geteuid() == 0 && PublicDir() == Dir() {
		t.Errorf("root's public directory is its private one, %s", Dir())
	}
}
