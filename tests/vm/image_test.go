package vm

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// patternWrites are the writes every image test makes, as qemu-io
// commands, with the reads that must find them afterwards (including a
// region never written, which reads as zeros).
var (
	patternWrites = []string{
		"write -P 0xab 0 1M",
		"write -P 0xcd 300M 64k",
		"write -P 0x5c 1023M 1M",
		"write -P 0x11 600M 4k",
		"write -z 600M 512", // zero the first sector of the last write
	}
	patternReads = []string{
		"read -P 0xab 0 1M",
		"read -P 0xcd 300M 64k",
		"read -P 0x5c 1023M 1M",
		"read -P 0 600M 512",
		"read -P 0x11 629146112 3584", // 600M+512
		"read -P 0 1M 299M",
	}
)

// TestImageFormats creates qcow2 and raw images on the mount, writes and
// reads them back with qemu-io through O_DIRECT and through the page
// cache, checks them with qemu-img check and converts between formats.
func TestImageFormats(t *testing.T) {
	_, m := mountOne(t)
	for _, format := range []string{"qcow2", "raw"} {
		for _, cache := range []cacheMode{cacheNone, cacheWriteback} {
			t.Run(fmt.Sprintf("%s/cache=%s", format, cache), func(t *testing.T) {
				image := m.Path(fmt.Sprintf("img-%s-%s.%s", format, cache, format))
				mustQemu(t, "qemu-img", "create", "-f", format, image, "1G")
				qemuIO(t, format, cache, image, patternWrites...)
				// A second process, another open: what the first wrote.
				qemuIO(t, format, cache, image, patternReads...)
				checkImage(t, format, image)
				convertBoth(t, format, image)
			})
		}
	}
}

// checkImage runs qemu-img check on a qcow2 image (raw has no metadata
// to check) and fails t unless it is clean.
func checkImage(t *testing.T, format, image string) {
	t.Helper()
	if format != "qcow2" {
		return
	}
	out := mustQemu(t, "qemu-img", "check", "-f", format, image)
	if !strings.Contains(out, "No errors were found") {
		t.Fatalf("qemu-img check %s:\n%s", image, out)
	}
}

// convertBoth converts image to the other format and back, with the
// destination opened O_DIRECT, and checks both copies hold the data.
func convertBoth(t *testing.T, format, image string) {
	t.Helper()
	other := map[string]string{"qcow2": "raw", "raw": "qcow2"}[format]
	dir := filepath.Dir(image)
	conv := filepath.Join(dir, filepath.Base(image)+".conv."+other)
	back := filepath.Join(dir, filepath.Base(image)+".back."+format)
	mustQemu(t, "qemu-img", "convert", "-f", format, "-O", other, "-t", "none", image, conv)
	mustQemu(t, "qemu-img", "convert", "-f", other, "-O", format, "-T", "none", conv, back)
	for _, c := range []struct{ format, path string }{{other, conv}, {format, back}} {
		qemuIO(t, c.format, cacheNone, c.path, patternReads...)
		checkImage(t, c.format, c.path)
	}
	mustQemu(t, "qemu-img", "compare", "-f", format, "-F", other, image, conv)
}

// TestMapAgreesWithData writes a raw image at known offsets and checks
// that qemu-img map reports exactly those extents as data, the same ones
// SEEK_DATA/SEEK_HOLE report, and that a qcow2 image maps its guest
// ranges the same way.
func TestMapAgreesWithData(t *testing.T) {
	_, m := mountOne(t)
	const mib = 1 << 20
	want := []extent{{1 * mib, 2 * mib}, {100*mib + 64<<10, 64 << 10}, {200 * mib, 1 * mib}}
	var writes []string
	for i, e := range want {
		writes = append(writes, fmt.Sprintf("write -P 0x%x %d %d", 0x21+i, e.Off, e.Len))
	}
	for _, format := range []string{"raw", "qcow2"} {
		t.Run(format, func(t *testing.T) {
			image := m.Path("map." + format)
			mustQemu(t, "qemu-img", "create", "-f", format, image, "256M")
			qemuIO(t, format, cacheNone, image, writes...)
			got := withoutFirstBlock(mapExtents(t, format, image))
			if !slices.Equal(got, want) {
				t.Errorf("qemu-img map data extents = %v, want %v", got, want)
			}
			if format == "raw" {
				seek := withoutFirstBlock(seekExtents(t, image))
				if !slices.Equal(seek, want) {
					t.Errorf("SEEK_DATA/SEEK_HOLE extents = %v, want %v", seek, want)
				}
			}
		})
	}
}

// withoutFirstBlock drops [0, 4096) from extents: qemu-img create writes
// the first block of a raw image (zeros) so that later opens can probe
// the alignment, so it is data though the test never wrote it.
func withoutFirstBlock(ext []extent) []extent {
	if len(ext) > 0 && ext[0].Off == 0 {
		ext[0].Off, ext[0].Len = 4096, ext[0].Len-4096
		if ext[0].Len <= 0 {
			ext = ext[1:]
		}
	}
	return ext
}
