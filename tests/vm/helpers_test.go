package vm

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
)

// mountTwo formats an embedded volume (SQLite + file bucket, which two
// mounts on one machine may share) and mounts it twice, as two "hosts".
func mountTwo(t *testing.T, extra ...string) (*testutil.Volume, *testutil.Mount, *testutil.Mount) {
	t.Helper()
	requireQemu(t)
	testutil.RequireFUSE(t)
	v := testutil.NewVolume(t)
	ms := mountAll(t, v, 2, extra...)
	return v, ms[0], ms[1]
}

// mountOne is mountTwo with one mount.
func mountOne(t *testing.T) (*testutil.Volume, *testutil.Mount) {
	t.Helper()
	requireQemu(t)
	testutil.RequireFUSE(t)
	v := testutil.NewVolume(t)
	return v, v.Mount(t)
}

// mountAll mounts v n times at v.Dir/host0..host{n-1}.
func mountAll(t *testing.T, v *testutil.Volume, n int, extra ...string) []*testutil.Mount {
	t.Helper()
	ms := make([]*testutil.Mount, n)
	for i := range ms {
		dir := filepath.Join(v.Dir, fmt.Sprintf("host%d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		ms[i] = v.MountAt(t, dir, extra...)
	}
	return ms
}

// extent is a byte range [Off, Off+Len).
type extent struct{ Off, Len int64 }

func (e extent) end() int64 { return e.Off + e.Len }

// seekExtents lists the data extents of path with SEEK_DATA/SEEK_HOLE.
func seekExtents(t testing.TB, path string) []extent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []extent
	fd := int(f.Fd())
	for off := int64(0); ; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, syscall.ENXIO) {
			return out
		}
		if err != nil {
			t.Fatalf("SEEK_DATA %s at %d: %v", path, off, err)
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			t.Fatalf("SEEK_HOLE %s at %d: %v", path, data, err)
		}
		out = append(out, extent{data, hole - data})
		off = hole
	}
}

// mapEntry is one record of `qemu-img map --output=json`.
type mapEntry struct {
	Start  int64 `json:"start"`
	Length int64 `json:"length"`
	Data   bool  `json:"data"`
	Zero   bool  `json:"zero"`
}

// mapExtents returns the data extents `qemu-img map` reports for image,
// adjacent ones merged.
func mapExtents(t testing.TB, format, image string) []extent {
	t.Helper()
	out := mustQemu(t, "qemu-img", "map", "-f", format, "--output=json", image)
	var entries []mapEntry
	if err := json.Unmarshal([]byte(out), &entries); err != nil {
		t.Fatalf("qemu-img map output: %v\n%s", err, out)
	}
	var ext []extent
	for _, e := range entries {
		if e.Data {
			ext = addExtent(ext, extent{e.Start, e.Length})
		}
	}
	return ext
}

// addExtent appends e to sorted extents, merging it with the last one
// when they touch or overlap.
func addExtent(ext []extent, e extent) []extent {
	if n := len(ext); n > 0 && ext[n-1].end() >= e.Off {
		ext[n-1].Len = max(ext[n-1].end(), e.end()) - ext[n-1].Off
		return ext
	}
	return append(ext, e)
}

// allocated returns st_blocks*512 of path: what du counts.
func allocated(t testing.TB, path string) int64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}
