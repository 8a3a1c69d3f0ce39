package kv

import (
	"context"
	"testing"
)

func TestPrefixEnd(t *testing.T) {
	cases := []struct{ in, want []byte }{
		{nil, nil},
		{[]byte{0xff, 0xff}, nil},
		{[]byte{1, 2}, []byte{1, 3}},
		{[]byte{1, 0xff}, []byte{2}},
		{[]byte{0, 0xfe, 0xff, 0xff}, []byte{0, 0xff}},
	}
	for _, c := range cases {
		if got := PrefixEnd(c.in); string(got) != string(c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("PrefixEnd(%x) = %x, want %x", c.in, got, c.want)
		}
	}
}

// callStore records which kind of transaction ran.
type callStore struct {
	Store
	snapshots bool
	ran       string
}

func (s *callStore) View(_ context.Context, fn func(Tx) error) error { s.ran = "view"; return fn(nil) }
func (s *callStore) Txn(_ context.Context, fn func(Tx) error) error  { s.ran = "txn"; return fn(nil) }
func (s *callStore) SnapshotViews() bool                             { return s.snapshots }

type excludingStore struct{ *callStore }

func (s excludingStore) Exclusive(_ context.Context, fn func(Tx) error) error {
	s.ran = "exclusive"
	return fn(nil)
}

func TestConsistentRead(t *testing.T) {
	for _, c := range []struct {
		s    Store
		want string
	}{
		{&callStore{snapshots: true}, "view"},
		{excludingStore{&callStore{}}, "exclusive"},
		{&callStore{}, "txn"}, // neither: Exclusive's fallback
	} {
		if err := ConsistentRead(t.Context(), c.s, func(Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
		var ran string
		switch s := c.s.(type) {
		case *callStore:
			ran = s.ran
		case excludingStore:
			ran = s.ran
		}
		if ran != c.want {
			t.Errorf("ConsistentRead ran a %s, want a %s", ran, c.want)
		}
	}
}
