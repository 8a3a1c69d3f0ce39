package vm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
)

// cloneLimit is how long a clone of the template may take. The issue asks
// for well under a second; the bound leaves room for a loaded machine,
// and the test logs the time it measured.
const cloneLimit = 2 * time.Second

// templateWrites put a few MiB of data into a 20 GiB template.
var templateWrites = []string{
	"write -P 0xa1 0 2M",
	"write -P 0xa2 5G 1M",
	"write -P 0xa3 10G 4M",
	"write -P 0xa4 20479M 1M", // the last MiB
}

var templateReads = []string{
	"read -P 0xa1 0 2M",
	"read -P 0xa2 5G 1M",
	"read -P 0xa3 10G 4M",
	"read -P 0xa4 20479M 1M",
	"read -P 0 2M 1M",
}

// clone is one way to copy the template: run copies src to dst; shared
// says whether the copy must share the template's blocks (store no new
// data), and slack is how many new bytes of objects it may store anyway.
type clone struct {
	name   string
	run    func(src, dst string) error
	shared bool
	slack  int64
}

var clones = []clone{
	// copy_file_range(2): Shoal clones the slice references.
	{"copy_file_range", copyWhole, true, 0},
	// qemu-img convert -C offloads the copy to copy_file_range; qemu
	// writes the first 4 KiB of a new raw image itself.
	{"qemu-img convert -C", func(src, dst string) error {
		_, err := qemu("qemu-img", "convert", "-C", "-f", "raw", "-O", "raw", src, dst)
		return err
	}, true, 64 << 10},
	// cp --reflink=auto: FICLONE cannot reach a FUSE file system (the
	// kernel answers it, FUSE has no remap_file_range), and Debian 12's
	// coreutils 9.1 then copies the data extents it finds with SEEK_DATA
	// by read and write. Fast for a sparse template, but not shared.
	{"cp --reflink=auto", func(src, dst string) error {
		out, err := exec.Command("cp", "--reflink=auto", "--sparse=auto", src, dst).CombinedOutput()
		if err != nil {
			return fmt.Errorf("cp: %w: %s", err, out)
		}
		return nil
	}, false, 0},
}

// TestTemplateClone copies a 20 GiB sparse raw template with 8 MiB of
// data: each copy returns fast, the metadata-only ones store no new
// objects, every copy reads the same, and writes to a copy leave the
// template unchanged.
func TestTemplateClone(t *testing.T) {
	v, m := mountOne(t)
	tmpl := m.Path("template.raw")
	mustQemu(t, "qemu-img", "create", "-f", "raw", tmpl, "20G")
	qemuIO(t, "raw", cacheNone, tmpl, templateWrites...)
	for _, c := range clones {
		dst := m.Path(strings.ReplaceAll("vm-"+c.name+".raw", " ", "_"))
		before := bucketBytes(t, v)
		start := time.Now()
		if err := c.run(tmpl, dst); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		took := time.Since(start)
		grew := bucketBytes(t, v) - before
		t.Logf("%s of the 20 GiB template: %v, %d new bytes in the bucket, du %d KiB",
			c.name, took.Round(time.Microsecond), grew, allocated(t, dst)>>10)
		if took > cloneLimit {
			t.Errorf("%s took %v, want under %v", c.name, took, cloneLimit)
		}
		if c.shared && grew > c.slack {
			t.Errorf("%s stored %d new bytes of objects: blocks were copied, not shared", c.name, grew)
		}
		qemuIO(t, "raw", cacheNone, dst, templateReads...)
		qemuIO(t, "raw", cacheNone, dst, "write -P 0xee 1M 64k", "write -P 0xef 10G 4k")
		qemuIO(t, "raw", cacheNone, tmpl, templateReads...)
		qemuIO(t, "raw", cacheNone, dst, "read -P 0xee 1M 64k", "read -P 0xef 10G 4k",
			fmt.Sprintf("read -P 0xa3 %d %d", 10<<30+4096, 4<<20-4096))
	}
}

// bucketBytes is the total size of the volume's data block objects.
func bucketBytes(t *testing.T, v *testutil.Volume) int64 {
	t.Helper()
	var n int64
	for _, key := range v.BlockObjects(t) {
		st, err := os.Stat(filepath.Join(v.Bucket, key))
		if err != nil {
			t.Fatal(err)
		}
		n += st.Size()
	}
	return n
}

// copyWhole copies src to a new file dst with copy_file_range(2), looping
// as the call may copy less than asked.
func copyWhole(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer out.Close()
	var off int64
	for off < st.Size() {
		inOff, outOff := off, off
		n, err := unix.CopyFileRange(int(in.Fd()), &inOff, int(out.Fd()), &outOff, int(st.Size()-off), 0)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		off += int64(n)
	}
	return out.Close()
}
