package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

func newInstallCmd() *cobra.Command {
	var prefix, sbinDir string
	var uninstall bool
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Put shoal on PATH, with the mount.shoal helper and shell completions",
		Long: `Copy this binary to PREFIX/bin/shoal, link the mount(8) helpers
mount.shoal and mount.fuse.shoal to it (in /sbin, where mount(8) looks for
them, unless --prefix is neither /usr nor /usr/local or --sbin-dir says
otherwise), and write bash, zsh and fish completions under PREFIX/share.
Running it again replaces what it wrote; --uninstall removes it.`,
		Example: `  ./shoal install                  # /usr/local/bin/shoal, /sbin/mount.shoal
  shoal install --prefix ~/.local  # no root needed; no mount(8) helper in /sbin
  shoal install --uninstall`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			l := newLayout(prefix, sbinDir)
			if uninstall {
				return l.remove(cmd.OutOrStdout())
			}
			return l.install(cmd.Root(), cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&prefix, "prefix", "/usr/local", "installation prefix")
	cmd.Flags().StringVar(&sbinDir, "sbin-dir", "", "where the mount(8) helpers go (default /sbin for the prefixes /usr and /usr/local, else PREFIX/sbin)")
	cmd.Flags().BoolVar(&uninstall, "uninstall", false, "remove what install wrote")
	return cmd
}

// layout is where install puts each file.
type layout struct {
	bin     string   // the binary
	helpers []string // mount(8) helpers, symlinks to bin
	comps   map[string]string
}

func newLayout(prefix, sbinDir string) layout {
	prefix = filepath.Clean(prefix)
	if sbinDir == "" {
		sbinDir = filepath.Join(prefix, "sbin")
		if prefix == "/usr" || prefix == "/usr/local" {
			sbinDir = "/sbin"
		}
	}
	share := filepath.Join(prefix, "share")
	return layout{
		bin:     filepath.Join(prefix, "bin", "shoal"),
		helpers: []string{filepath.Join(sbinDir, "mount.shoal"), filepath.Join(sbinDir, "mount.fuse.shoal")},
		comps: map[string]string{
			"bash": filepath.Join(share, "bash-completion", "completions", "shoal"),
			"zsh":  filepath.Join(share, "zsh", "site-functions", "_shoal"),
			"fish": filepath.Join(share, "fish", "vendor_completions.d", "shoal.fish"),
		},
	}
}

func (l layout) install(root *cobra.Command, out io.Writer) error {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return fmt.Errorf("finding this binary: %w", err)
	}
	if err := installBinary(exe, l.bin); err != nil {
		return installHint(err)
	}
	fmt.Fprintf(out, "installed %s\n", l.bin)
	for _, h := range l.helpers {
		if err := replaceSymlink(l.bin, h); err != nil {
			return installHint(err)
		}
		fmt.Fprintf(out, "installed %s -> %s\n", h, l.bin)
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		if err := writeCompletion(root, shell, l.comps[shell]); err != nil {
			return installHint(err)
		}
		fmt.Fprintf(out, "installed %s (%s completion)\n", l.comps[shell], shell)
	}
	return nil
}

func (l layout) remove(out io.Writer) error {
	paths := append([]string{l.bin}, l.helpers...)
	for _, shell := range []string{"bash", "zsh", "fish"} {
		paths = append(paths, l.comps[shell])
	}
	for _, p := range paths {
		err := os.Remove(p)
		switch {
		case err == nil:
			fmt.Fprintf(out, "removed %s\n", p)
		case !errors.Is(err, os.ErrNotExist):
			return installHint(err)
		}
	}
	return nil
}

// installHint says what to do when a system directory is not writable.
func installHint(err error) error {
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("%w (install as root, or into your home with --prefix ~/.local)", err)
	}
	return err
}

// installBinary copies src to dst (mode 755) through a temporary file and
// a rename, so that a running shoal keeps its old binary; nothing is done
// if dst already is src.
func installBinary(src, dst string) error {
	if a, err := os.Stat(src); err == nil {
		if b, err := os.Stat(dst); err == nil && os.SameFile(a, b) {
			return nil
		}
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return writeAtomic(dst, 0o755, func(w io.Writer) error { _, err := io.Copy(w, in); return err })
}

// writeAtomic writes dst through fill into a temporary file beside it and
// renames it into place.
func writeAtomic(dst string, mode os.FileMode, fill func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".shoal-install-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := fill(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// replaceSymlink makes link a symlink to target, replacing what is there.
func replaceSymlink(target, link string) error {
	if cur, err := os.Readlink(link); err == nil && cur == target {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return err
	}
	tmp := link + ".shoal-install"
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, link)
}

// writeCompletion writes root's completion script for shell to path.
func writeCompletion(root *cobra.Command, shell, path string) error {
	var b bytes.Buffer
	var err error
	switch shell {
	case "bash":
		err = root.GenBashCompletionV2(&b, true)
	case "zsh":
		err = root.GenZshCompletion(&b)
	case "fish":
		err = root.GenFishCompletion(&b, true)
	}
	if err != nil {
		return err
	}
	return writeAtomic(path, 0o644, func(w io.Writer) error { _, err := w.Write(b.Bytes()); return err })
}
