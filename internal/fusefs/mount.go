package fusefs

import (
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// MountConfig are the kernel-facing options of a mount.
type MountConfig struct {
	FsName     string // shown as the source in /proc/mounts and df
	AllowOther bool   // let users other than the mounter in
	Debug      bool   // log every FUSE request
	// Locks forwards flock and fcntl locks to the file system so they hold
	// across machines; without it the kernel keeps them local.
	Locks bool
}

// maxRequest is the largest read and write request: the kernel's limit
// (256 pages). The default 128 KiB costs half the sequential throughput.
const maxRequest = 1 << 20

// Mount mounts fs at mountpoint and starts serving it. The returned server
// is already serving; Wait on it returns after the file system is
// unmounted.
func Mount(mountpoint string, fs *FS, cfg MountConfig) (*fuse.Server, error) {
	opts := mountOptions(cfg)
	srv, err := fuse.NewServer(fs.served(), mountpoint, opts)
	if err != nil {
		return nil, explainMountError(mountpoint, err)
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		_ = srv.Unmount()
		return nil, explainMountError(mountpoint, err)
	}
	return srv, nil
}

// mountOptions are go-fuse's options for cfg.
func mountOptions(cfg MountConfig) *fuse.MountOptions {
	opts := &fuse.MountOptions{
		FsName:        cfg.FsName,
		Name:          "shoal",
		AllowOther:    cfg.AllowOther,
		MaxWrite:      maxRequest,
		MaxReadAhead:  maxRequest,
		MaxBackground: 64,
		// The kernel enforces permissions with full credentials, POSIX
		// ACLs included: it reads them through getxattr, caches them with
		// the attributes and checks them itself (FUSE_POSIX_ACL).
		Options:   []string{"default_permissions"},
		EnableAcl: true,
		// READDIRPLUS_AUTO: the kernel asks for attributes with the first
		// page of a listing and afterwards only while the listed names are
		// being looked up (ls -l, find -type...), not for a plain listing,
		// which then costs names only (a readdirplus entry costs the kernel
		// an inode and a dentry: a listing of them ran at a fifth of the
		// rate). The lookups that follow a plain listing (the stat of
		// every entry) are answered from what it read (vfs.FS.LookupListed).
		// DONT_MASK: creates carry the mode
		// unmasked and the umask beside it, since a parent's default ACL
		// replaces the umask. SETXATTR_EXT: the kernel says when setting
		// an ACL must clear setgid.
		// HANDLE_KILLPRIV_V2: the mount clears setuid and setgid where a
		// write, truncate, open(O_TRUNC) or chown must (the kernel flags
		// those requests), so the kernel checks security.capability once
		// per inode (SB_NOSEC) instead of asking before every write: a
		// second round trip per small write.
		ExtraCapabilities: fuse.CAP_ATOMIC_O_TRUNC | fuse.CAP_READDIRPLUS_AUTO | fuse.CAP_ASYNC_DIO |
			fuse.CAP_DONT_MASK | fuse.CAP_SETXATTR_EXT | fuse.CAP_HANDLE_KILLPRIV_V2,
		Debug:       cfg.Debug,
		EnableLocks: cfg.Locks,
		DirectMount: true,
		// Reads answer with bytes, never a file descriptor to splice
		// from; with splicing on, go-fuse still tried it for every read
		// (a pipe taken, written and discarded: a few µs a 4 KiB read).
		DisableSplice: true,
		// security.capability is looked up on every write; the kernel
		// asks the mount, which costs a round trip each time.
		IgnoreSecurityLabels: false,
	}
	if cfg.Debug {
		opts.Logger = log.New(os.Stderr, "fuse: ", log.Lmicroseconds)
	}
	return opts
}

// explainMountError adds what to do to the usual mount failures.
func explainMountError(mountpoint string, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "/dev/fuse") || strings.Contains(msg, "fusermount"):
		return fmt.Errorf("cannot mount %s: %w (is FUSE available? install the fuse3 package, load the fuse module, and mount as root or a user allowed to use /dev/fuse)", mountpoint, err)
	case strings.Contains(msg, "permission denied"):
		return fmt.Errorf("cannot mount %s: %w (mount as root, or add user_allow_other to /etc/fuse.conf for --allow-other)", mountpoint, err)
	}
	return fmt.Errorf("cannot mount %s: %w", mountpoint, err)
}
