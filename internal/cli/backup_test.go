package cli

import "testing"

func TestSplitDest(t *testing.T) {
	for _, c := range []struct{ in, dest, name string }{
		{"/backup/shoal", "/backup/shoal", ""},
		{"/backup/shoal:nightly-1", "/backup/shoal", "nightly-1"},
		{"s3://bucket/prefix", "s3://bucket/prefix", ""},
		{"http://127.0.0.1:9000", "http://127.0.0.1:9000", ""},
		{"http://127.0.0.1:9000/bucket", "http://127.0.0.1:9000/bucket", ""},
		{"http://127.0.0.1:9000/bucket/:b.2", "http://127.0.0.1:9000/bucket/", "b.2"},
	} {
		dest, name := splitDest(c.in)
		if dest != c.dest || name != c.name {
			t.Errorf("splitDest(%q) = %q, %q; want %q, %q", c.in, dest, name, c.dest, c.name)
		}
	}
}
