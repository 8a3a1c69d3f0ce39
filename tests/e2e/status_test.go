package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"shoal/internal/testutil"
)

// TestStatus checks that `shoal status` reports the format settings and
// the usage (space, inodes) of a volume after files were written.
func TestStatus(t *testing.T) {
	testutil.RequireFUSE(t)
	v := testutil.NewVolumeWith(t, testutil.VolumeConfig{ExtraFormatArgs: []string{"--block-size", "1M"}})
	m := v.Mount(t)
	for i := 0; i < 10; i++ {
		writeFile(t, m.Path(fmt.Sprintf("f%d", i)), randBytes(uint64(i), 100<<10), 0o644)
	}
	m.Unmount(t)

	text := testutil.MustRun(t, "status", v.MetaURL).Stdout
	for _, want := range []string{"test", "1.0 MiB"} {
		if !strings.Contains(text, want) {
			t.Errorf("status does not mention %q:\n%s", want, text)
		}
	}
	var doc map[string]any
	out := testutil.MustRun(t, "status", "--json", v.MetaURL).Stdout
	ok(t, json.Unmarshal([]byte(out), &doc), "status --json")
	checks := []struct {
		path []string
		want func(float64) bool
		desc string
	}{
		{[]string{"format", "blocksize"}, func(x float64) bool { return x == 1<<20 }, "1 MiB"},
		{[]string{"usage", "usedinodes"}, func(x float64) bool { return x == 11 }, "11 (root + 10 files)"},
		{[]string{"usage", "usedspace"}, func(x float64) bool { return x >= 10*100<<10 }, ">= 1000 KiB"},
	}
	for _, c := range checks {
		x, found := lookup(doc, c.path)
		f, isNum := x.(float64)
		if !found || !isNum || !c.want(f) {
			t.Errorf("status --json %s = %v, want %s\n%s", strings.Join(c.path, "."), x, c.desc, out)
		}
	}
}

// lookup walks nested JSON objects by key, ignoring case and underscores.
func lookup(doc map[string]any, path []string) (any, bool) {
	var cur any = doc
	for _, key := range path {
		obj, isObj := cur.(map[string]any)
		if !isObj {
			return nil, false
		}
		found := false
		for k, v := range obj {
			if strings.ReplaceAll(strings.ToLower(k), "_", "") == key {
				cur, found = v, true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return cur, true
}
