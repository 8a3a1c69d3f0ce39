package fusefs

import "testing"

func TestSplitTimes(t *testing.T) {
	tests := []struct {
		ns   int64
		sec  int64
		nsec uint32
	}{
		{0, 0, 0},
		{1_500_000_000, 1, 500_000_000},
		{-1000*1e9 + 5, -1000, 5},
		{-1, -1, 999_999_999},
	}
	for _, tt := range tests {
		sec, nsec := split(tt.ns)
		if int64(sec) != tt.sec || nsec != tt.nsec {
			t.Errorf("split(%d) = %d, %d; want %d, %d", tt.ns, int64(sec), nsec, tt.sec, tt.nsec)
		}
		if back := int64(sec)*1e9 + int64(nsec); back != tt.ns {
			t.Errorf("round trip of %d gave %d", tt.ns, back)
		}
	}
}
