package e2e

import (
	"encoding/binary"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// fileCaps is a valid security.capability value (revision 2,
// CAP_NET_BIND_SERVICE permitted and effective).
func fileCaps() []byte {
	v := make([]byte, 20)
	binary.LittleEndian.PutUint32(v[0:], 0x02000000|1) // VFS_CAP_REVISION_2 | effective
	binary.LittleEndian.PutUint32(v[4:], 1<<10)        // permitted, low word
	return v
}

// TestKillPrivileges checks what a write, a truncate and a change of
// owner do to the set-id bits and file capabilities, as on a local disk:
// an unprivileged writer or truncater clears setuid, and setgid where
// group exec is set or the caller is not in the file's group, visible before write(2)
// returns; root's writes keep them (CAP_FSETID); a chown clears them even
// by root; any write drops security.capability.
func TestKillPrivileges(t *testing.T) {
	m := mountFresh(t)
	p := m.Path
	ok(t, os.Chmod(m.Dir, 0o755), "chmod root")
	setid := func(name string, mode uint32) string {
		t.Helper()
		writeFile(t, p(name), []byte("data"), 0o644)
		ok(t, unix.Chmod(p(name), mode), "chmod "+name)
		return p(name)
	}
	modeOf := func(path string) uint32 { return stat(t, path).Mode & 0o7777 }

	// Operations by nobody, and the mode each leaves. Setgid without
	// group exec goes too when the writer is not in the file's group
	// (Linux since 6.2; ext4 on the test machine does so). write-fstat
	// also checks the mode before close.
	for _, c := range []struct {
		op         string
		mode, want uint32
	}{
		{"write-fstat", 0o6777, 0o777},
		{"write", 0o2666, 0o666},
		{"truncate", 0o6777, 0o777},
		{"open-trunc", 0o6777, 0o777},
	} {
		f := setid("nobody-"+c.op, c.mode)
		if got := asNobody(t, c.op, f); got != "OK" {
			t.Errorf("%s by nobody on mode %o: %s", c.op, c.mode, got)
			continue
		}
		if m := modeOf(f); m != c.want {
			t.Errorf("after %s by nobody on mode %o: mode %o, want %o", c.op, c.mode, m, c.want)
		}
	}

	f := setid("root-write", 0o6777)
	fh, err := os.OpenFile(f, os.O_WRONLY|os.O_APPEND, 0)
	ok(t, err, "open")
	_, err = fh.Write([]byte("more"))
	ok(t, err, "write")
	ok(t, fh.Close(), "close")
	if m := modeOf(f); m != 0o6777 {
		t.Errorf("after a write by root: mode %o, want 6777 (CAP_FSETID keeps them)", m)
	}

	f = setid("chown", 0o6777)
	ok(t, os.Chown(f, 65534, 65534), "chown")
	if m := modeOf(f); m&0o6000 != 0 {
		t.Errorf("after chown by root: mode %o, want set-id bits cleared", m)
	}

	for _, byNobody := range []bool{false, true} {
		name := "caps-root"
		if byNobody {
			name = "caps-nobody"
		}
		f = p(name)
		writeFile(t, f, []byte("data"), 0o666)
		ok(t, unix.Setxattr(f, "security.capability", fileCaps(), 0), "setcap "+name)
		if _, err := unix.Getxattr(f, "security.capability", make([]byte, 64)); err != nil {
			t.Fatalf("%s: capability not set: %v", name, err)
		}
		if byNobody {
			if got := asNobody(t, "write", f); got != "OK" {
				t.Fatalf("write by nobody: %s", got)
			}
		} else {
			ok(t, os.WriteFile(f, []byte("new"), 0o666), "write "+name)
		}
		if _, err := unix.Getxattr(f, "security.capability", make([]byte, 64)); err != unix.ENODATA {
			t.Errorf("%s: security.capability after a write: %v, want ENODATA", name, err)
		}
	}
}
