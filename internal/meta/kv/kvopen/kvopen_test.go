package kvopen

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"shoal/internal/meta/kv"
)

func TestOpenDispatch(t *testing.T) {
	ctx := context.Background()
	for _, url := range []string{"sqlite://" + filepath.Join(t.TempDir(), "m.db"), "mem://"} {
		s, err := Open(ctx, url)
		if err != nil {
			t.Fatalf("Open(%q): %v", url, err)
		}
		if err := s.Txn(ctx, func(tx kv.Tx) error { tx.Set([]byte("k"), []byte("v")); return nil }); err != nil {
			t.Errorf("%s: Txn: %v", s.Name(), err)
		}
		s.Close()
	}
}

func TestOpenErrors(t *testing.T) {
	cases := map[string]string{
		"foo://x":                     `unknown META-URL scheme "foo": use sqlite://`,
		"/just/a/path":                "has no scheme",
		"redis://127.0.0.1:1/0":       "is the server running",
		"postgres://u@127.0.0.1:1/db": "is the server running at 127.0.0.1:1",
		"redis://h1:1,h2:2/0":         "cluster=true",
	}
	for url, want := range cases {
		s, err := Open(context.Background(), url)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", url)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q) = %v, want it to mention %q", url, err, want)
		}
	}
}
