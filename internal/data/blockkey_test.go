package data

import "testing"

func TestParseBlockKey(t *testing.T) {
	good := []BlockRef{{1, 0, 1}, {123456789, 15, 4 << 20}, {999, 3, 4096}}
	for _, b := range good {
		key := BlockKey(b.ID, b.Index, b.Size)
		if got, ok := ParseBlockKey(key); !ok || got != b {
			t.Fatalf("ParseBlockKey(%q) = %+v, %v", key, got, ok)
		}
	}
	for _, key := range []string{"chunks/0/0/1_0", "chunks/0/0/1_0_0", "chunks/0/1/1_0_5", "chunks/0/0/01_0_5",
		"chunks/0/0/1_-1_5", "chunks/0/0/0_0_5", "probe/x", "chunks/0/0/1_0_5/x", "chunks/0/0/1_0_5_6", "chunks/a/b/c"} {
		if b, ok := ParseBlockKey(key); ok {
			t.Fatalf("ParseBlockKey(%q) = %+v, want not a block key", key, b)
		}
	}
}
