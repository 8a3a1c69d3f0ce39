package fusefs

import (
	"context"
	"testing"
	"time"

	"shoal/internal/meta"
)

func dirAttr(nlink uint32) meta.Attr { return meta.Attr{Type: meta.TypeDir, Mode: 0o755, Nlink: nlink} }

// TestDirAttrsKeepsLatestCommit: of two changes of one directory that
// overlap, neither keeps what it wrote (the one that finishes last may have
// committed first); a change alone does, until its directory or anything
// else changes, or the timeout passes.
func TestDirAttrsKeepsLatestCommit(t *testing.T) {
	const d = meta.Ino(7)
	ds := &dirAttrs{ttl: time.Hour}

	_, first := ds.begin(context.Background(), d)
	_, second := ds.begin(context.Background(), d)
	second.written.Wrote(d, dirAttr(4)) // committed last, finishes first
	second.end(true)
	first.written.Wrote(d, dirAttr(3))
	first.end(true)
	if a, _, ok := ds.get(d); ok {
		t.Fatalf("overlapping changes kept nlink %d", a.Nlink)
	}

	c, alone := ds.begin(context.Background(), d)
	if meta.WrittenTo(c) != &alone.written {
		t.Fatal("the change's context does not collect what the engine wrote")
	}
	alone.written.Wrote(d, dirAttr(5))
	alone.end(true)
	if a, left, ok := ds.get(d); !ok || a.Nlink != 5 || left <= 0 || left > time.Hour {
		t.Fatalf("a change alone: got %+v, %v, %v; want nlink 5 for up to the timeout", a, left, ok)
	}

	// A change still running when another finishes keeps nothing, and
	// retires what the finished one kept when it ends.
	_, running := ds.begin(context.Background(), d)
	_, other := ds.begin(context.Background(), meta.Ino(8))
	other.written.Wrote(d, dirAttr(6)) // wrote d too (a rename's moved directory, say)
	other.end(true)
	if _, _, ok := ds.get(d); ok {
		t.Fatal("a change that wrote the directory did not retire what was kept of it")
	}
	running.written.Wrote(d, dirAttr(7))
	running.end(true)
	if _, _, ok := ds.get(d); ok {
		t.Fatal("a change overlapped by another that wrote its directory kept its attributes")
	}

	_, ch := ds.begin(context.Background(), d)
	ch.written.Wrote(d, dirAttr(8))
	ch.end(true)
	ds.changed() // a setattr or an xattr change somewhere
	if _, _, ok := ds.get(d); ok {
		t.Fatal("kept attributes served after a setattr or xattr change")
	}

	_, failed := ds.begin(context.Background(), d)
	failed.end(false)
	if _, _, ok := ds.get(d); ok {
		t.Fatal("a failed change kept attributes")
	}
}

// TestDirAttrsTimeout: nothing is kept with --strict (no attribute
// timeout), and a kept entry is served only for what is left of the
// timeout counted from the change's start.
func TestDirAttrsTimeout(t *testing.T) {
	const d = meta.Ino(9)
	strict := &dirAttrs{}
	_, ch := strict.begin(context.Background(), d)
	ch.written.Wrote(d, dirAttr(3))
	ch.end(true)
	if _, _, ok := strict.get(d); ok {
		t.Fatal("kept attributes without an attribute timeout")
	}

	ds := &dirAttrs{ttl: 50 * time.Millisecond}
	_, ch = ds.begin(context.Background(), d)
	time.Sleep(20 * time.Millisecond)
	ch.written.Wrote(d, dirAttr(3))
	ch.end(true)
	if _, left, ok := ds.get(d); !ok || left > 30*time.Millisecond {
		t.Fatalf("got left %v, %v; want at most 30ms of the timeout left", left, ok)
	}
	time.Sleep(40 * time.Millisecond)
	if _, _, ok := ds.get(d); ok {
		t.Fatal("kept attributes served past the timeout")
	}
}
