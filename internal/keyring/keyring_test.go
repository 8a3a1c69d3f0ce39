package keyring

import (
	"bytes"
	"errors"
	"testing"
)

func TestWrapOpenRewrap(t *testing.T) {
	e, key, err := New([]byte("old secret"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(e.WrappedKey, key) {
		t.Fatal("data key stored in clear")
	}
	got, err := Open(e, []byte("old secret"))
	if err != nil || !bytes.Equal(got, key) {
		t.Fatalf("Open: %v", err)
	}
	if _, err := Open(e, []byte("other")); !errors.Is(err, ErrWrongSecret) {
		t.Fatalf("wrong secret: %v", err)
	}
	r, err := Rewrap(e, []byte("old secret"), []byte("new secret"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(r, []byte("old secret")); !errors.Is(err, ErrWrongSecret) {
		t.Fatalf("old secret after rotation: %v", err)
	}
	got, err = Open(r, []byte("new secret"))
	if err != nil || !bytes.Equal(got, key) {
		t.Fatalf("new secret: %v", err)
	}
	if _, err := Rewrap(e, []byte("bad"), []byte("x")); !errors.Is(err, ErrWrongSecret) {
		t.Fatalf("rewrap with a wrong secret: %v", err)
	}
}
