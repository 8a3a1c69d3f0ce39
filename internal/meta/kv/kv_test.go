package kv

import "testing"

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
