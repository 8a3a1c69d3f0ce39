package service

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"shoal/internal/testutil"
)

// helpers are the mount(8) helpers 'shoal install' links in /sbin.
var helpers = []string{"/sbin/mount.shoal", "/sbin/mount.fuse.shoal"}

// installed is a 'shoal install' into a temporary prefix whose mount(8)
// helpers are in the real /sbin.
type installed struct{ prefix, bin string }

// install runs 'shoal install' and removes what it wrote when t ends,
// restoring helpers that were there before.
func install(t *testing.T) installed {
	t.Helper()
	testutil.RequireFUSE(t) // root, and a system to install into
	for _, h := range helpers {
		if _, err := os.Lstat(h); err == nil {
			saved := h + ".before-shoal-test"
			if err := os.Rename(h, saved); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Rename(saved, h) })
		}
	}
	prefix := t.TempDir()
	in := installed{prefix: prefix, bin: filepath.Join(prefix, "bin", "shoal")}
	t.Cleanup(func() {
		res := testutil.Run(t, "install", "--prefix", prefix, "--sbin-dir", "/sbin", "--uninstall")
		if res.Code != 0 {
			t.Errorf("install --uninstall: exit %d: %s", res.Code, res.Stderr)
		}
		for _, h := range helpers {
			if _, err := os.Lstat(h); err == nil {
				t.Errorf("%s is still there after --uninstall", h)
			}
		}
	})
	testutil.MustRun(t, "install", "--prefix", prefix, "--sbin-dir", "/sbin")
	return in
}

func TestInstall(t *testing.T) {
	in := install(t)
	again := testutil.MustRun(t, "install", "--prefix", in.prefix, "--sbin-dir", "/sbin") // idempotent
	for _, h := range helpers {
		if target, err := os.Readlink(h); err != nil || target != in.bin {
			t.Errorf("%s -> %q (%v), want a link to %s", h, target, err, in.bin)
		}
		if !strings.Contains(again.Stdout, h) {
			t.Errorf("install does not say it installed %s:\n%s", h, again.Stdout)
		}
	}
	// The installed binary installs itself again (onto itself) just as well.
	if out, err := exec.Command(in.bin, "install", "--prefix", in.prefix, "--sbin-dir", "/sbin").CombinedOutput(); err != nil {
		t.Errorf("installed shoal install: %v\n%s", err, out)
	}
	out, err := exec.Command(in.bin, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "shoal") {
		t.Errorf("installed binary: %v: %s", err, out)
	}
	comps := map[string]string{
		"share/bash-completion/completions/shoal":    "complete",
		"share/zsh/site-functions/_shoal":            "#compdef shoal",
		"share/fish/vendor_completions.d/shoal.fish": "complete -c shoal",
	}
	for rel, want := range comps {
		b, err := os.ReadFile(filepath.Join(in.prefix, rel))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s: %v; want a script containing %q", rel, err, want)
		}
	}
	// The scripts ask the binary (shoal __complete), which completes.
	out, err = exec.Command(in.bin, "__complete", "ins").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "install") {
		t.Errorf("shoal __complete ins: %v: %q", err, out)
	}
}
