package benchlab

import (
	"context"
	"errors"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"shoal/internal/bench/report"
)

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// screenshot renders page in headless Chromium and checks the picture:
// not blank, and the bar colours of the first targets present in
// quantity and spread down the page (several charts, not one).
func screenshot(t *testing.T, page string, targets int) {
	t.Helper()
	chromium := requireTool(t, "chromium", "chromium-browser", "google-chrome")
	dir := t.TempDir()
	shot := filepath.Join(dir, "page.png")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+shot, "--window-size=1100,6000",
		"file://"+page)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	img := decodePNG(t, shot)
	if keep := os.Getenv("SHOAL_BENCH_SCREENSHOT"); keep != "" {
		data, _ := os.ReadFile(shot)
		os.WriteFile(keep, data, 0o644)
	}
	checkPicture(t, img, targets)
}

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decoding the screenshot: %v", err)
	}
	return img
}

// checkPicture counts the pixels of each target colour and the rows they
// span.
func checkPicture(t *testing.T, img image.Image, targets int) {
	t.Helper()
	b := img.Bounds()
	nonWhite := 0
	counts := make([]int, targets)
	first, last := make([]int, targets), make([]int, targets)
	for i := range first {
		first[i] = -1
	}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r>>8 < 250 || g>>8 < 250 || bl>>8 < 250 {
				nonWhite++
			}
			for i := 0; i < targets; i++ {
				if near(r>>8, g>>8, bl>>8, report.Palette[i]) {
					counts[i]++
					if first[i] < 0 {
						first[i] = y
					}
					last[i] = y
				}
			}
		}
	}
	if total := b.Dx() * b.Dy(); nonWhite < total/50 {
		t.Errorf("screenshot is nearly blank: %d of %d pixels not white", nonWhite, total)
	}
	for i := 0; i < targets; i++ {
		t.Logf("colour %s: %d pixels, rows %d..%d", report.Palette[i], counts[i], first[i], last[i])
		if counts[i] < 5000 || last[i]-first[i] < 1500 {
			t.Errorf("target %d's bars (%s) not rendered: %d pixels over rows %d..%d", i, report.Palette[i], counts[i], first[i], last[i])
		}
	}
}

// near reports whether (r, g, b) is within 3 of the colour hex "#rrggbb".
func near(r, g, b uint32, hex string) bool {
	var c [3]uint32
	for i := range c {
		var v uint32
		for _, ch := range hex[1+2*i : 3+2*i] {
			v *= 16
			switch {
			case ch >= '0' && ch <= '9':
				v += uint32(ch - '0')
			default:
				v += uint32(ch-'a') + 10
			}
		}
		c[i] = v
	}
	d := func(a, b uint32) uint32 {
		if a > b {
			return a - b
		}
		return b - a
	}
	return d(r, c[0]) <= 3 && d(g, c[1]) <= 3 && d(b, c[2]) <= 3
}
