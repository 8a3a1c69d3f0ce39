package kvtest

import (
	"errors"
	"testing"

	"shoal/internal/meta/kv"
)

func testGetSetDelete(t *testing.T, s kv.Store) {
	a, b := key('i', 1, ""), key('i', 2, "")
	wantValue(t, s, a, nil)
	set(t, s, a, []byte("one"), b, []byte("two"))
	wantValue(t, s, a, []byte("one"))
	wantValue(t, s, b, []byte("two"))
	set(t, s, a, []byte("uno"))
	wantValue(t, s, a, []byte("uno"))
	err := s.Txn(ctxFor(t), func(tx kv.Tx) error {
		tx.Delete(a)
		tx.Delete(key('i', 3, "")) // absent: fine
		return nil
	})
	if err != nil {
		t.Fatalf("Txn delete: %v", err)
	}
	wantValue(t, s, a, nil)
	wantValue(t, s, b, []byte("two"))
}

func testEmptyValue(t *testing.T, s kv.Store) {
	k := key('x', 7, "empty")
	set(t, s, k, []byte{})
	got := get(t, s, k)
	if got == nil || len(got) != 0 {
		t.Fatalf("empty value read back as %s, want present and empty", show(got))
	}
	got2 := scan(t, s, prefix('x', 7), nil, 0)
	wantPairs(t, got2, []pair{{string(k), ""}})
}

func testBufferOwnership(t *testing.T, s kv.Store) {
	k := key('o', 1, "k")
	kbuf, vbuf := append([]byte(nil), k...), []byte("value")
	err := s.Txn(ctxFor(t), func(tx kv.Tx) error {
		tx.Set(kbuf, vbuf)
		// The caller may reuse its buffers right after Set.
		copy(kbuf, "zzzzzzzzzz")
		copy(vbuf, "XXXXX")
		return nil
	})
	if err != nil {
		t.Fatalf("Txn: %v", err)
	}
	wantValue(t, s, k, []byte("value"))
	got := get(t, s, k)
	copy(got, "YYYYY") // the returned slice is the caller's
	wantValue(t, s, k, []byte("value"))
}

func testReadYourWrites(t *testing.T, s kv.Store) {
	a := key('r', 1, "a")
	set(t, s, a, []byte("old"))
	err := s.Txn(ctxFor(t), func(tx kv.Tx) error {
		steps := []struct {
			op   func()
			want []byte
		}{
			{func() {}, []byte("old")},
			{func() { tx.Set(a, []byte("new")) }, []byte("new")},
			{func() { tx.Delete(a) }, nil},
			{func() { tx.Set(a, []byte("again")) }, []byte("again")},
		}
		for i, st := range steps {
			st.op()
			v, err := tx.Get(a)
			if err != nil {
				return err
			}
			if (v == nil) != (st.want == nil) || string(v) != string(st.want) {
				t.Errorf("step %d: Get = %s, want %s", i, show(v), show(st.want))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Txn: %v", err)
	}
	wantValue(t, s, a, []byte("again"))
}

func testRollback(t *testing.T, s kv.Store) {
	a, b := key('r', 2, "a"), key('r', 2, "b")
	set(t, s, a, []byte("keep"))
	boom := errors.New("boom")
	calls := 0
	err := s.Txn(ctxFor(t), func(tx kv.Tx) error {
		calls++
		tx.Set(a, []byte("lost"))
		tx.Set(b, []byte("lost"))
		tx.Delete(a)
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Txn returned %v, want fn's error", err)
	}
	if calls != 1 {
		t.Errorf("fn ran %d times after returning its own error, want 1", calls)
	}
	wantValue(t, s, a, []byte("keep"))
	wantValue(t, s, b, nil)
	if got := scan(t, s, prefix('r', 2), nil, 0); len(got) != 1 {
		t.Fatalf("after rollback scan = %q, want only the kept key", got)
	}
}

func testViewRefusesWrites(t *testing.T, s kv.Store) {
	a := key('v', 1, "")
	set(t, s, a, []byte("orig"))
	err := s.View(ctxFor(t), func(tx kv.Tx) error {
		tx.Set(a, []byte("changed"))
		tx.Delete(key('v', 2, ""))
		return nil
	})
	if err == nil {
		t.Fatal("View with Set returned nil error, want a refusal")
	}
	err = s.View(ctxFor(t), func(tx kv.Tx) error {
		tx.Delete(a)
		return nil
	})
	if err == nil {
		t.Fatal("View with Delete returned nil error, want a refusal")
	}
	wantValue(t, s, a, []byte("orig"))
}

func testClose(t *testing.T, s kv.Store) {
	if s.Name() == "" {
		t.Error("Name() is empty")
	}
	set(t, s, key('c', 1, ""), []byte("x"))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := ctxFor(t)
	if err := s.Txn(ctx, func(tx kv.Tx) error { return nil }); err == nil {
		t.Error("Txn after Close returned nil error")
	}
	err := s.View(ctx, func(tx kv.Tx) error {
		_, err := tx.Get(key('c', 1, ""))
		return err
	})
	if err == nil {
		t.Error("View after Close returned nil error")
	}
}
