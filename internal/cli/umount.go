package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

func newUmountCmd() *cobra.Command {
	var lazy bool
	var wait time.Duration
	cmd := &cobra.Command{
		Use:     "umount MOUNTPOINT",
		Aliases: []string{"unmount"},
		Short:   "Unmount a Shoal mount after its buffered writes are stored",
		Long: `Unmount MOUNTPOINT. Every file is flushed when it is closed, so an unmount
that succeeds has nothing left to write; it fails with "busy" while files are
open, unless --lazy (the mount then goes away when the last file closes).
The command waits for the mount process to finish closing the volume.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runUmount(args[0], lazy, wait)
		},
	}
	cmd.Flags().BoolVarP(&lazy, "lazy", "l", false, "detach now even if files are open (umount -l)")
	cmd.Flags().DurationVar(&wait, "wait", 60*time.Second, "how long to wait for the mount process to exit")
	return cmd
}

func runUmount(mp string, lazy bool, wait time.Duration) error {
	abs, err := absPath(mp)
	if err != nil {
		return err
	}
	_, fstype, ok := mountedAt(abs)
	if !ok {
		return withCode(ExitNotFound, fmt.Errorf("%s is not mounted", abs))
	}
	if !strings.HasPrefix(fstype, "fuse") {
		return fmt.Errorf("%s is a %s mount, not Shoal's; use umount(8)", abs, fstype)
	}
	pid := readPid(abs)
	if err := unmount(abs, lazy); err != nil {
		return err
	}
	waitExit(pid, wait)
	return nil
}

// unmount detaches mp, as root directly, else through fusermount3.
func unmount(mp string, lazy bool) error {
	flags := 0
	if lazy {
		flags = syscall.MNT_DETACH
	}
	err := syscall.Unmount(mp, flags)
	if errors.Is(err, syscall.EPERM) {
		args := []string{"-u", mp}
		if lazy {
			args = []string{"-u", "-z", mp}
		}
		out, ferr := exec.Command("fusermount3", args...).CombinedOutput()
		if ferr != nil {
			return fmt.Errorf("unmounting %s: %s", mp, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if errors.Is(err, syscall.EBUSY) {
		return fmt.Errorf("%s is busy: close the files and directories in use (see 'fuser -vm %s'), or use --lazy", mp, mp)
	}
	if err != nil {
		return fmt.Errorf("unmounting %s: %w", mp, err)
	}
	return nil
}

func readPid(mp string) int {
	b, err := os.ReadFile(pidFile(mp))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// waitExit waits until process pid is gone (or d passes).
func waitExit(pid int, d time.Duration) {
	if pid <= 0 {
		return
	}
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func absPath(p string) (string, error) { return filepath.Abs(p) }

// alive reports whether pid runs (a zombie has finished its work).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
