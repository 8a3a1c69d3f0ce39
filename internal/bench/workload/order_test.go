package workload

import (
	"math/rand/v2"
	"testing"
)

// isPermutation reports whether xs holds each of 0..n-1 once.
func isPermutation(xs []int64, n int64) bool {
	if int64(len(xs)) != n {
		return false
	}
	seen := make([]bool, n)
	for _, x := range xs {
		if x < 0 || x >= n || seen[x] {
			return false
		}
		seen[x] = true
	}
	return true
}

func TestOrders(t *testing.T) {
	for _, n := range []int64{1, 5, 17, 100, 1000} {
		if !isPermutation(strideOrder(n, IozoneStride), n) {
			t.Errorf("strideOrder(%d) is not a permutation", n)
		}
		if !isPermutation(reverseOrder(n), n) {
			t.Errorf("reverseOrder(%d) is not a permutation", n)
		}
		if !isPermutation(randomOrder(n, rand.New(rand.NewPCG(1, 2))), n) {
			t.Errorf("randomOrder(%d) is not a permutation", n)
		}
	}
	s := strideOrder(40, 17)
	if s[0] != 0 || s[1] != 17 || s[2] != 34 || s[3] != 1 {
		t.Errorf("strideOrder starts %v", s[:4])
	}
	if r := reverseOrder(3); r[0] != 2 || r[2] != 0 {
		t.Errorf("reverseOrder(3) = %v", r)
	}
	a := randomOrder(50, rand.New(rand.NewPCG(1, 2)))
	b := randomOrder(50, rand.New(rand.NewPCG(1, 2)))
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("randomOrder is not reproducible from its seed")
		}
	}
}

func TestAutoGridLikeIozone(t *testing.T) {
	w := &Iozone{Auto: true, AutoMinFile: 64 << 10, AutoMaxFile: 64 << 20, AutoMinRec: 4 << 10, AutoMaxRec: 16 << 20}
	grid := w.autoGrid()
	has := func(f, r int64) bool {
		for _, g := range grid {
			if g[0] == f && g[1] == r {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		f, r int64
		want bool
	}{
		{64 << 10, 4 << 10, true}, {64 << 10, 64 << 10, true}, {64 << 10, 128 << 10, false},
		{32 << 20, 4 << 10, true}, {64 << 20, 32 << 10, false}, {64 << 20, 64 << 10, true},
		{64 << 20, 16 << 20, true}, {128 << 20, 64 << 10, false},
	} {
		if has(tc.f, tc.r) != tc.want {
			t.Errorf("grid has (%s, %s) = %v, want %v", Size(tc.f), Size(tc.r), !tc.want, tc.want)
		}
	}
	// 64K..64M is 11 file sizes; records 4K..min(f,16M), minus small records above 32M.
	if len(grid) != 5+6+7+8+9+10+11+12+13+13+9 {
		t.Errorf("grid has %d entries", len(grid))
	}
}

func TestSizes(t *testing.T) {
	for in, want := range map[string]int64{"4k": 4096, "100MiB": 100 << 20, "1g": 1 << 30, "512": 512, "1.5K": 1536, "8KB": 8192, "0": 0} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1k", "4q"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
	if lo, hi, err := ParseRange("1KiB-256KiB"); err != nil || lo != 1024 || hi != 256<<10 {
		t.Errorf("ParseRange = %d %d %v", lo, hi, err)
	}
	if _, _, err := ParseRange("2k-1k"); err == nil {
		t.Error("ParseRange accepted high < low")
	}
	for n, want := range map[int64]string{4096: "4KiB", 100 << 20: "100MiB", 1536: "1.5KiB", 0: "0B", 1000: "1000B"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	if err := Validate(&Iozone{Workers: 1, FileSize: 1, Record: 32 << 20}, 16<<20); err == nil {
		t.Error("record above the maximum accepted")
	}
	if err := Validate(&PostMark{Files: 1, ReadBlock: 1, WriteBlock: 1, ReadBias: 11}, 16<<20); err == nil {
		t.Error("bias 11 accepted")
	}
	for _, w := range small() {
		if err := Validate(w, 16<<20); err != nil {
			t.Errorf("%s: %v", w.Name(), err)
		}
	}
}
