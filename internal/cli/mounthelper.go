package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"shoal/internal/secret"
)

// mount(8) runs /sbin/mount.TYPE SOURCE DIR [-sfnv] [-N NS] -o OPTIONS for
// `mount -t TYPE` and for fstab lines of that type. The shoal binary is its
// own helper: installed (by `shoal install`) as mount.shoal (type "shoal")
// and mount.fuse.shoal (type "fuse.shoal", what /proc/mounts shows), it
// turns the options into `shoal mount --background` flags.
var helperNames = map[string]bool{"mount.shoal": true, "mount.fuse.shoal": true}

// helperEnv marks the processes a helper starts (the background mount
// re-runs the executable, which may be a copy named mount.shoal), so that
// they run as `shoal`, not as the helper again.
const helperEnv = "SHOAL_MOUNT_HELPER"

// Exit codes of the helper, as mount(8) documents them for helpers.
const (
	mountExitUsage = 1  // incorrect invocation
	mountExitFail  = 32 // mount failure
)

// isMountHelper reports whether args[0] names the mount(8) helper.
func isMountHelper(args []string) bool {
	return len(args) > 0 && helperNames[filepath.Base(args[0])] && os.Getenv(helperEnv) == ""
}

// helperArgs is a parsed mount(8) helper command line.
type helperArgs struct {
	source, dir   string
	opts          []string
	sloppy, fake  bool
	verbose       bool
	ignoredParams []string
}

// parseHelperArgs reads SOURCE DIR and the flags mount(8) passes, in any
// order.
func parseHelperArgs(args []string) (helperArgs, error) {
	var h helperArgs
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-o" || a == "-t" || a == "-N":
			if i+1 >= len(args) {
				return h, fmt.Errorf("%s needs a value", a)
			}
			i++
			if err := h.flagValue(a[1], args[i]); err != nil {
				return h, err
			}
		case strings.HasPrefix(a, "-o") || strings.HasPrefix(a, "-t") || strings.HasPrefix(a, "-N"):
			if err := h.flagValue(a[1], a[2:]); err != nil {
				return h, err
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if err := h.boolFlags(a[1:]); err != nil {
				return h, err
			}
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) != 2 {
		return h, errors.New("usage: mount.shoal META-URL MOUNTPOINT [-o OPTIONS] [-snfv]")
	}
	h.source, h.dir = pos[0], pos[1]
	return h, nil
}

func (h *helperArgs) flagValue(flag byte, v string) error {
	switch flag {
	case 'o':
		for _, o := range strings.Split(v, ",") {
			if o != "" {
				h.opts = append(h.opts, o)
			}
		}
	case 'N':
		return errors.New("-N (mount in another namespace) is not supported")
	}
	return nil // -t: the type is ours whatever its spelling
}

func (h *helperArgs) boolFlags(s string) error {
	for _, c := range s {
		switch c {
		case 's':
			h.sloppy = true
		case 'f':
			h.fake = true
		case 'v':
			h.verbose = true
		case 'n', 'r', 'w': // no mtab; -r/-w arrive as ro/rw options too
		default:
			return fmt.Errorf("unknown flag -%c", c)
		}
	}
	return nil
}

// genericOptions are mount(8)'s own options (fstab, VFS), accepted and
// ignored: they are for mount(8) and systemd, or what a Shoal mount does
// anyway (nosuid, nodev, exec).
var genericOptions = map[string]bool{
	"defaults": true, "rw": true, "auto": true, "noauto": true, "_netdev": true, "nofail": true,
	"user": true, "users": true, "nouser": true, "owner": true, "group": true,
	"nosuid": true, "nodev": true, "exec": true, "async": true, "atime": true, "noatime": true,
	"relatime": true, "nodiratime": true, "strictatime": true, "lazytime": true, "silent": true, "loud": true,
	"default_permissions": true, // always on
}

// refusedOptions are generic options a Shoal mount cannot honour; mounting
// without them would be a surprise, so they are refused.
var refusedOptions = map[string]string{
	"ro":     "read-only mounts are not supported",
	"noexec": "noexec is not supported (Shoal mounts are always nosuid,nodev)",
	"suid":   "suid is not supported (Shoal mounts are always nosuid)",
	"dev":    "dev is not supported (Shoal mounts are always nodev)",
	"sync":   "sync is not supported: fsync files that must be on the store",
}

// envOptions set an environment variable of the mount instead of a flag,
// for what has no flag: where the S3 keys are.
var envOptions = map[string]string{
	"aws-credentials-file": "AWS_SHARED_CREDENTIALS_FILE",
	"aws-profile":          "AWS_PROFILE",
}

// helperFlags maps mount options to flags of `shoal mount` (fs holds its
// flags and the root's): NAME=VALUE → --NAME=VALUE, NAME → --NAME for a
// switch; '_' may stand for '-' (allow_other). Unknown options are refused
// unless sloppy. It returns the flags and the environment to set.
func helperFlags(opts []string, fs *pflag.FlagSet, sloppy bool) (flags, env []string, err error) {
	for _, o := range opts {
		name, value, hasValue := strings.Cut(o, "=")
		norm := strings.ReplaceAll(name, "_", "-")
		if genericOptions[name] || strings.HasPrefix(name, "x-") || name == "comment" {
			continue
		}
		if why, ok := refusedOptions[name]; ok {
			return nil, nil, errors.New(why)
		}
		if v, ok := envOptions[norm]; ok && hasValue {
			env = append(env, v+"="+value)
			continue
		}
		f := fs.Lookup(norm)
		switch {
		case f == nil || norm == "background" || norm == "help" || norm == "log-level":
			if sloppy {
				continue
			}
			return nil, nil, fmt.Errorf("unknown mount option %q (the options are the long flags of 'shoal mount --help', without the dashes)", name)
		case !hasValue && f.Value.Type() != "bool":
			return nil, nil, fmt.Errorf("mount option %q needs a value (%s=...)", name, name)
		case hasValue:
			flags = append(flags, "--"+norm+"="+value)
		default:
			flags = append(flags, "--"+norm)
		}
	}
	return flags, env, nil
}

// mountHelperMain runs as /sbin/mount.shoal and returns mount(8)'s exit
// code: the mount goes to the background and this returns once it serves.
func mountHelperMain(args []string) int {
	code, err := runMountHelper(args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "mount.shoal: %s\n", secret.Mask(err.Error()))
	}
	return code
}

func runMountHelper(args []string) (int, error) {
	h, err := parseHelperArgs(args)
	if err != nil {
		return mountExitUsage, err
	}
	if secret.Has(h.source) {
		return mountExitUsage, errors.New("the META-URL holds a password, which /etc/fstab and mount's command line show to every user: " +
			"remove it from the URL and add the option meta-password-file=PATH (a file only root can read), or set " + secret.PasswordEnv)
	}
	root := newRootCmd()
	mountCmd, _, _ := root.Find([]string{"mount"})
	fs := pflag.NewFlagSet("mount", pflag.ContinueOnError)
	fs.AddFlagSet(mountCmd.Flags())
	fs.AddFlagSet(root.PersistentFlags())
	flags, env, err := helperFlags(h.opts, fs, h.sloppy)
	if err != nil {
		return mountExitUsage, err
	}
	cmdline := append([]string{"shoal", "mount", h.source, h.dir, "--background"}, flags...)
	if h.verbose {
		fmt.Fprintf(os.Stderr, "mount.shoal: %s %s\n", strings.Join(env, " "), secret.Mask(strings.Join(cmdline, " ")))
	}
	if h.fake {
		return 0, nil
	}
	for _, kv := range append(env, helperEnv+"=1") {
		k, v, _ := strings.Cut(kv, "=")
		_ = os.Setenv(k, v)
	}
	os.Args = cmdline // the background mount re-runs os.Args
	var out io.Writer = io.Discard
	if h.verbose {
		out = os.Stdout
	}
	switch code := run(cmdline, out); code {
	case ExitOK:
		return 0, nil
	case ExitUsage:
		return mountExitUsage, nil
	default:
		return mountExitFail, nil
	}
}
