package pattern

import (
	"errors"
	"testing"
)

func TestStreamsAreDeterministicAndDistinct(t *testing.T) {
	p, q := New(7, 1<<16), New(7, 1<<16)
	a := p.Bytes(1, 12345, 4096)
	if string(a) != string(q.Bytes(1, 12345, 4096)) {
		t.Fatal("same seed, key and offset gave different bytes")
	}
	if string(a) == string(p.Bytes(2, 12345, 4096)) {
		t.Error("different keys gave the same bytes")
	}
	if string(a) == string(p.Bytes(1, 12345+4096, 4096)) {
		t.Error("different offsets gave the same bytes")
	}
	if string(a) == string(New(8, 1<<16).Bytes(1, 12345, 4096)) {
		t.Error("different seeds gave the same bytes")
	}
}

func TestStreamIsContinuous(t *testing.T) {
	p := New(1, 4096)
	// A stream read in pieces equals the stream read at once, also across
	// the pool's wrap-around point.
	for _, off := range []int64{0, Period - 100, 5 * Period / 3} {
		whole := append([]byte(nil), p.Bytes(9, off, 4096)...)
		for i := 0; i < 4096; i += 512 {
			if string(p.Bytes(9, off+int64(i), 512)) != string(whole[i:i+512]) {
				t.Fatalf("offset %d piece %d differs", off, i)
			}
		}
	}
}

func TestVerify(t *testing.T) {
	p := New(3, 1024)
	buf := append([]byte(nil), p.Bytes(5, 777, 1024)...)
	buf = append(buf, p.Bytes(5, 777+1024, 1000)...)
	if err := p.Verify(5, 777, buf); err != nil {
		t.Fatalf("verify of right data: %v", err)
	}
	buf[1500] ^= 1
	err := p.Verify(5, 777, buf)
	var me *MismatchError
	if !errors.Is(err, ErrMismatch) || !errors.As(err, &me) || me.Offset != 777+1500 {
		t.Fatalf("verify of wrong data: %v", err)
	}
	if err := p.Verify(6, 777, buf[:100]); err == nil {
		t.Error("data of another key verified")
	}
}

func TestBytesClipsToMax(t *testing.T) {
	if n := len(New(1, 100).Bytes(0, 0, 1000)); n != 100 {
		t.Errorf("len %d, want 100", n)
	}
}
