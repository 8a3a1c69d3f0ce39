package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"shoal/internal/vfs"
)

// newCloneCmd is `shoal clone SRC DST`.
func newCloneCmd() *cobra.Command {
	var preserve bool
	cmd := &cobra.Command{
		Use:   "clone SRC DST",
		Short: "Copy a file or a directory tree instantly, sharing its data (copy on write)",
		Long: `clone makes a writable copy of a file or a whole directory tree inside a
mounted Shoal volume without copying data: the copy shares the source's
blocks, and either side's later writes go to new blocks (copy on write). A
file is cloned in one engine transaction; a tree's metadata is copied in
one transaction too, as the tree was at one instant (other mounts' writes
wait meanwhile). Hard links inside the tree stay hard links.

SRC and DST are paths in one Shoal mount. If DST is an existing directory
the copy goes into it under SRC's name, as with cp. You need read access to
everything you clone and write access to the destination directory; the
copies are yours, unless root asks for --preserve (owners, modes and times
as in the source, like cp -a).`,
		Example: `  shoal clone /mnt/shoal/images/golden.qcow2 /mnt/shoal/images/vm42.qcow2
  shoal clone /mnt/shoal/sites/prod /mnt/shoal/sites/staging`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			start := time.Now()
			dst, err := clonePaths(args[0], args[1], preserve)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cloned %s to %s in %s\n", args[0], dst, time.Since(start).Round(100*time.Microsecond))
			return nil
		},
	}
	cmd.Flags().BoolVar(&preserve, "preserve", false, "keep owners, modes and times (root only), like cp -a")
	return cmd
}

// clonePaths asks the mount holding src to clone it to dst; it returns the
// path of the copy.
func clonePaths(src, dst string, preserve bool) (string, error) {
	var sst unix.Stat_t
	if err := unix.Lstat(src, &sst); err != nil {
		return "", withCode(ExitNotFound, fmt.Errorf("clone: %s: %w", src, err))
	}
	var dstat unix.Stat_t
	if err := unix.Stat(dst, &dstat); err == nil && dstat.Mode&unix.S_IFMT == unix.S_IFDIR {
		dst = filepath.Join(dst, filepath.Base(src))
	}
	parent, name := filepath.Dir(dst), filepath.Base(dst)
	var pst unix.Stat_t
	if err := unix.Stat(parent, &pst); err != nil {
		return "", withCode(ExitNotFound, fmt.Errorf("clone: %s: %w", parent, err))
	}
	if pst.Dev != sst.Dev {
		return "", withCode(ExitUsage, fmt.Errorf("clone: %s and %s are not in one Shoal mount (cp copies between file systems)", src, dst))
	}
	if !isShoalDevice(pst.Dev) {
		return "", withCode(ExitUsage, fmt.Errorf("clone: %s is not in a Shoal mount (clone works inside one; use cp elsewhere)", parent))
	}
	value, _ := json.Marshal(vfs.CloneControl{Src: sst.Ino, Name: name, Preserve: preserve})
	err := unix.Setxattr(parent, vfs.CloneXattr, value, 0)
	switch {
	case err == nil:
		awaitName(dst)
		return dst, nil
	case errors.Is(err, syscall.EEXIST):
		return "", fmt.Errorf("clone: %s exists: remove it or choose another name", dst)
	case errors.Is(err, syscall.EINVAL):
		return "", withCode(ExitUsage, fmt.Errorf("clone: cannot copy %s into itself", src))
	case errors.Is(err, syscall.EOPNOTSUPP):
		return "", fmt.Errorf("clone: the mount of %s cannot clone (its metadata engine has no clones)", parent)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return "", fmt.Errorf("clone: permission denied: you need read access to all of %s and write access to %s", src, parent)
	case errors.Is(err, syscall.EROFS):
		return "", fmt.Errorf("clone: %s is read-only (a snapshot): clone into the live tree", parent)
	}
	return "", fmt.Errorf("clone %s to %s: %w", src, dst, os.NewSyscallError("setxattr", err))
}

// cloneVisibleWait bounds awaitName: above the mount's default
// negative-entry timeout (1 s), after which the kernel asks again anyway.
const cloneVisibleWait = 2 * time.Second

// awaitName waits until dst resolves, for at most cloneVisibleWait. The
// Stat above may have left the kernel a negative entry for the new name,
// and the mount drops it only after answering the setxattr (the kernel
// holds the directory's lock until then: fusefs forgetEntry); without the
// wait, a process that looks the copy up the moment clone returns could
// be told it does not exist. A negative entry is answered from the
// kernel's cache, so the wait costs no request to the mount.
func awaitName(dst string) {
	deadline := time.Now().Add(cloneVisibleWait)
	var st unix.Stat_t
	for unix.Lstat(dst, &st) == unix.ENOENT && time.Now().Before(deadline) {
		time.Sleep(200 * time.Microsecond)
	}
}

// isShoalDevice reports whether the file system of device dev is a Shoal
// mount (fuse.shoal in /proc/self/mountinfo).
func isShoalDevice(dev uint64) bool {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	want := fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev))
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[2] != want {
			continue
		}
		for i, fl := range fields {
			if fl == "-" && i+1 < len(fields) {
				return fields[i+1] == "fuse.shoal"
			}
		}
	}
	return false
}
