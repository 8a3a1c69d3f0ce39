package machine

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMountOf(t *testing.T) {
	mounts := `/dev/vda / ext4 rw,relatime 0 0
tmpfs /tmp tmpfs rw 0 0
shoal /tmp/my\040mnt fuse.shoal rw,user_id=0 0 0
bindfs /tmp/b fuse.bindfs rw 0 0
`
	for _, tc := range []struct{ path, point, typ string }{
		{"/home/x", "/", "ext4"},
		{"/tmp", "/tmp", "tmpfs"},
		{"/tmp/bx", "/tmp", "tmpfs"},
		{"/tmp/b/c", "/tmp/b", "fuse.bindfs"},
		{"/tmp/my mnt/d", "/tmp/my mnt", "fuse.shoal"},
	} {
		m, ok := mountOf(tc.path, mounts)
		if !ok || m.point != tc.point || m.fstype != tc.typ {
			t.Errorf("mountOf(%q) = %+v, %v; want %s %s", tc.path, m, ok, tc.point, tc.typ)
		}
	}
}

func TestParsers(t *testing.T) {
	dir := t.TempDir()
	cpu := filepath.Join(dir, "cpuinfo")
	os.WriteFile(cpu, []byte("processor\t: 0\nmodel name\t: Test CPU @ 2GHz\n"), 0o644)
	if m, err := cpuModel(cpu); err != nil || m != "Test CPU @ 2GHz" {
		t.Errorf("cpuModel = %q, %v", m, err)
	}
	mem := filepath.Join(dir, "meminfo")
	os.WriteFile(mem, []byte("MemTotal:       24684032 kB\nMemFree: 1 kB\n"), 0o644)
	if n, err := memTotal(mem); err != nil || n != 24684032<<10 {
		t.Errorf("memTotal = %d, %v", n, err)
	}
}

func TestCollectAndDescribe(t *testing.T) {
	f := Collect()
	if f.Cores < 1 || f.Kernel == "" {
		t.Errorf("facts %+v", f)
	}
	fs := Describe(t.TempDir(), ReadMounts())
	if fs.Error != "" || fs.StatfsType == "" || fs.MountType == "" || fs.SizeBytes <= 0 {
		t.Errorf("describe %+v", fs)
	}
}
