package objecttest

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"shoal/internal/object"
)

// listKeys returns the keys of a List call and checks sizes against sizes.
func listKeys(t *testing.T, s object.Store, prefix, after string, limit int, sizes map[string]int64) []string {
	t.Helper()
	infos, err := s.List(ctxFor(t), prefix, after, limit)
	if err != nil {
		t.Fatalf("List(%q, %q, %d): %v", prefix, after, limit, err)
	}
	keys := make([]string, len(infos))
	for i, in := range infos {
		keys[i] = in.Key
		if want, ok := sizes[in.Key]; ok && in.Size != want {
			t.Fatalf("List(%q, %q, %d): %q has size %d, want %d", prefix, after, limit, in.Key, in.Size, want)
		}
	}
	return keys
}

// expect computes the List answer from the full key set.
func expect(all []string, prefix, after string, limit int) []string {
	var out []string
	for _, k := range all {
		if strings.HasPrefix(k, prefix) && k > after {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

func wantKeys(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("%s:\n got  %q\n want %q", what, got, want)
	}
}

// orderKeys mix characters that sort before and after '/', so a backend
// that walks directories must order "a.b" before "a/..." before "a0".
var orderKeys = []string{
	"a.b", "a/b", "a/c/d", "a/c.d", "a/c-d", "a0", "a-z", "a_z",
	"b", "chunks/0/1/123_0_4096", "chunks/0/1/123_1_4096", "chunks/0/10/10000_0_17",
	"chunks/0/1/1234_0_1", "chunks/0/2/2000_0_5", "chunks/1/1000/1000000_0_9",
	"z/\u00e9t\u00e9", "z/~tilde", "z/ space",
}

func testListOrder(t *testing.T, s object.Store) {
	sizes := map[string]int64{}
	for i, k := range orderKeys {
		put(t, s, k, randBytes(int64(i), i))
		sizes[k] = int64(i)
	}
	wantKeys(t, "List all", listKeys(t, s, "", "", 0, sizes), expect(orderKeys, "", "", 0))
	for _, prefix := range []string{"a", "a/", "a/c", "chunks/", "chunks/0/1", "chunks/0/1/", "chunks/0/1/123_", "z/", "nomatch", "a/b"} {
		what := fmt.Sprintf("List(prefix %q)", prefix)
		wantKeys(t, what, listKeys(t, s, prefix, "", 0, sizes), expect(orderKeys, prefix, "", 0))
	}
}

func testListPrefixAfterLimit(t *testing.T, s object.Store) {
	for i, k := range orderKeys {
		put(t, s, k, randBytes(int64(i), 3))
	}
	cases := []struct {
		prefix, after string
		limit         int
	}{
		{"", "a/b", 0}, {"", "a/", 3}, {"", "a", 2}, {"", "b", 0}, {"", "zzz", 0},
		{"a", "a/b", 0}, {"a/", "a/c", 0}, {"a/", "", 1}, {"chunks/", "chunks/0/1/123_0_4096", 2},
		{"chunks/0/1", "chunks/0/1/123", 0}, {"chunks/", "chunks/0/1/", 0}, {"chunks/", "chunks/0/10", 1},
		{"chunks/", "a", 0}, {"a/", "zzz", 0}, {"chunks/0/", "chunks/0/1/123_1_4096", 0},
		{"", "", 1}, {"", "", 100}, {"z/", "z/ space", 0},
	}
	for _, c := range cases {
		what := fmt.Sprintf("List(%q, %q, %d)", c.prefix, c.after, c.limit)
		wantKeys(t, what, listKeys(t, s, c.prefix, c.after, c.limit, nil), expect(orderKeys, c.prefix, c.after, c.limit))
	}
}

// testListPaging walks a few hundred keys in pages, as gc and fsck do.
func testListPaging(t *testing.T, s object.Store) {
	var all []string
	for i := 0; i < 300; i++ {
		id := i * 37 % 1000
		k := fmt.Sprintf("chunks/0/%d/%d_0_1", id/100, id)
		all = append(all, k)
		put(t, s, k, []byte{byte(i)})
	}
	put(t, s, "other/x", []byte("x"))
	sort.Strings(all)
	var got []string
	after := ""
	for pages := 0; pages < 100; pages++ {
		page := listKeys(t, s, "chunks/", after, 7, nil)
		if len(page) == 0 {
			break
		}
		if len(page) > 7 {
			t.Fatalf("page of %d keys, limit 7", len(page))
		}
		got = append(got, page...)
		after = page[len(page)-1]
	}
	wantKeys(t, "paged List", got, all)
}
