package metatest

import (
	"errors"
	"testing"
	"time"

	"shoal/internal/meta"
)

// testCommitGate checks, on an engine that honours commit gates
// (meta.CommitGater), that WriteSlices commits only after its gate: a
// gate that fails commits nothing, and while a gate holds, the slice is
// in no list and the length is unchanged (for this client and for
// another operation beside it); once it returns, the commit lands.
func testCommitGate(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	if g, ok := v.e.(meta.CommitGater); !ok || !g.AwaitsCommitGate() {
		t.Skip("the engine does not await commit gates")
	}
	f := v.file(meta.RootIno, "f")
	id, err := v.e.NewSliceID(v.ctx)
	v.check(err, "new slice id")
	s := meta.Slice{ID: id, Size: 4096, Len: 4096}
	unchanged := func(when string) {
		t.Helper()
		if ss, err := v.e.ReadChunk(v.ctx, f.Ino, 0); err != nil || len(ss) != 0 {
			t.Fatalf("%s: chunk list %v (%v), want none", when, ss, err)
		}
		if a, err := v.e.Getattr(v.ctx, f.Ino); err != nil || a.Length != 0 {
			t.Fatalf("%s: length %d (%v), want 0", when, a.Length, err)
		}
	}

	errGate := errors.New("block lost")
	failing := meta.WithCommitGate(v.ctx, func() error { return errGate })
	if _, err := v.e.WriteSlices(failing, f.Ino, []meta.SliceWrite{{S: s}}); !errors.Is(err, errGate) {
		t.Fatalf("write slices through a failing gate: %v, want %v", err, errGate)
	}
	unchanged("after a failed gate")

	awaited, release := make(chan struct{}), make(chan struct{})
	held := meta.WithCommitGate(v.ctx, func() error {
		select {
		case <-awaited:
		default:
			close(awaited)
		}
		<-release
		return nil
	})
	done := make(chan error, 1)
	go func() {
		_, err := v.e.WriteSlices(held, f.Ino, []meta.SliceWrite{{S: s}})
		done <- err
	}()
	select {
	case <-awaited:
	case err := <-done:
		t.Fatalf("write slices returned (%v) without awaiting its gate", err)
	case <-time.After(30 * time.Second):
		t.Fatal("write slices never awaited its gate")
	}
	unchanged("while the gate holds")
	close(release)
	v.check(<-done, "write slices through a gate")
	if ss, err := v.e.ReadChunk(v.ctx, f.Ino, 0); err != nil || len(ss) != 1 || ss[0] != s {
		t.Fatalf("after the gate: chunk list %v (%v), want [%v]", ss, err, s)
	}
}
