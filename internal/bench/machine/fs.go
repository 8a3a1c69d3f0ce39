package machine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// FS describes the file system a directory lives on.
type FS struct {
	Dir        string `json:"dir"`
	StatfsType string `json:"statfs_type"` // from the statfs(2) magic number, e.g. "ext4/ext3/ext2", "fuse"
	Magic      string `json:"magic"`       // the magic number, hex
	MountPoint string `json:"mount_point"`
	MountType  string `json:"mount_type"` // from /proc/mounts, e.g. "ext4", "fuse.shoal"
	Source     string `json:"source"`
	Options    string `json:"options"`
	SizeBytes  int64  `json:"size_bytes"`
	FreeBytes  int64  `json:"free_bytes"`
	Error      string `json:"error,omitempty"`
}

// magicNames maps statfs f_type values to names (linux/magic.h).
var magicNames = map[int64]string{
	0xEF53:     "ext2/ext3/ext4",
	0x58465342: "xfs",
	0x9123683E: "btrfs",
	0x01021994: "tmpfs",
	0x65735546: "fuse",
	0x6969:     "nfs",
	0xFF534D42: "cifs",
	0x794C7630: "overlayfs",
	0x2FC12FC1: "zfs",
	0x73717368: "squashfs",
	0xF2F52010: "f2fs",
	0x9FA0:     "proc",
	0x62656572: "sysfs",
	0x858458F6: "ramfs",
	0x4D44:     "vfat",
	0x5346544E: "ntfs",
	0x00C36400: "ceph",
	0x47504653: "gpfs",
	0x0BD00BD0: "lustre",
	0x013111A8: "ibrix",
	0x7461636F: "ocfs2",
	0x01161970: "gfs2",
	0x24051905: "ubifs",
	0x6E736673: "nsfs",
}

// Describe returns the file-system facts of dir; mounts is the text of
// /proc/mounts (see ReadMounts).
func Describe(dir string, mounts string) FS {
	fs := FS{Dir: dir}
	abs, err := filepath.Abs(dir)
	if err == nil {
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			abs = r
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(abs, &st); err != nil {
		fs.Error = "statfs: " + err.Error()
	} else {
		fs.Magic = fmt.Sprintf("0x%X", uint64(st.Type))
		fs.StatfsType = magicNames[int64(st.Type)]
		if fs.StatfsType == "" {
			fs.StatfsType = "unknown"
		}
		fs.SizeBytes = int64(st.Blocks) * int64(st.Bsize)
		fs.FreeBytes = int64(st.Bavail) * int64(st.Bsize)
	}
	if m, ok := mountOf(abs, mounts); ok {
		fs.MountPoint, fs.MountType, fs.Source, fs.Options = m.point, m.fstype, m.source, m.options
	}
	return fs
}

type mountEntry struct{ source, point, fstype, options string }

// mountOf finds the mount holding path: the longest mount point that is a
// prefix of it; the last such line wins (later mounts hide earlier ones).
func mountOf(path, mounts string) (mountEntry, bool) {
	var best mountEntry
	found := false
	for _, line := range strings.Split(mounts, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		e := mountEntry{unescape(f[0]), unescape(f[1]), f[2], f[3]}
		if !within(path, e.point) {
			continue
		}
		if !found || len(e.point) >= len(best.point) {
			best, found = e, true
		}
	}
	return best, found
}

func within(path, point string) bool {
	if point == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == point || strings.HasPrefix(path, point+"/")
}

// unescape undoes the octal escapes of /proc/mounts (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ReadMounts returns the text of /proc/mounts, or "" if it cannot be read.
func ReadMounts() string {
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return ""
	}
	return string(b)
}
