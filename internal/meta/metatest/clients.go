package metatest

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"

	"shoal/internal/meta"
)

// ClientsFactory returns n engines over one empty store, as n mounts of one
// volume (on one machine or several). The suite closes them.
type ClientsFactory func(t *testing.T, n int) []meta.Engine

// RunClients runs the multi-client part of the suite: what one client
// does is visible to the others, ids never collide, concurrent renames
// can never build a directory cycle, and a file open on one client
// outlives its unlink on another.
func RunClients(t *testing.T, newClients ClientsFactory) {
	t.Run("Visibility", func(t *testing.T) { testVisibility(t, newClients) })
	t.Run("UniqueIDs", func(t *testing.T) { testUniqueIDs(t, newClients) })
	t.Run("RenameCycle", func(t *testing.T) { testRenameCycle(t, newClients) })
	t.Run("LinkCounts", func(t *testing.T) { testLinkCounts(t, newClients) })
	t.Run("Sessions", func(t *testing.T) { testSessions(t, newClients) })
	t.Run("Quota", func(t *testing.T) { testQuotaClients(t, newClients) })
	t.Run("DirQuota", func(t *testing.T) { testDirQuotaClients(t, newClients) })
	t.Run("SessionTimeouts", func(t *testing.T) { testSessionTimeouts(t, newClients) })
	t.Run("OpenFiles", func(t *testing.T) { testOpenFiles(t, newClients) })
	t.Run("OpenFilesSessionEnd", func(t *testing.T) { testOpenFilesSessionEnd(t, newClients) })
}

// clients makes n formatted clients.
func clients(t *testing.T, newClients ClientsFactory, n int) []*env {
	t.Helper()
	return formatClients(t, newClients(t, n))
}

// formatClients formats the store through the first engine and loads it
// on the others.
func formatClients(t *testing.T, engines []meta.Engine) []*env {
	t.Helper()
	out := make([]*env, len(engines))
	for i, e := range engines {
		t.Cleanup(func() { _ = e.Close() })
		out[i] = &env{t: t, e: e, ctx: context.Background()}
	}
	out[0].check(engines[0].Format(out[0].ctx, meta.Format{Name: "test"}, false), "format")
	for _, c := range out[1:] {
		if _, err := c.e.Load(c.ctx); err != nil {
			t.Fatalf("load on another client: %v", err)
		}
	}
	return out
}

func testVisibility(t *testing.T, newClients ClientsFactory) {
	cs := clients(t, newClients, 2)
	a, b := cs[0], cs[1]
	f := a.file(meta.RootIno, "f")
	s := a.write(f.Ino, 0, 100)
	ent, err := b.e.Lookup(b.ctx, meta.RootIno, "f")
	b.check(err, "lookup on the other client")
	if ent.Ino != f.Ino || ent.Attr.Length != 100 {
		t.Fatalf("other client sees %+v", ent)
	}
	b.wantView(f.Ino, 0, 0, 100, piece(s, 0, 0, 100))
	_, err = b.e.Unlink(b.ctx, meta.RootIno, "f")
	b.check(err, "unlink on the other client")
	_, err = a.e.Lookup(a.ctx, meta.RootIno, "f")
	a.wantErrno(err, syscall.ENOENT, "lookup after the other client's unlink")
}

func testUniqueIDs(t *testing.T, newClients ClientsFactory) {
	cs := clients(t, newClients, 4)
	var mu sync.Mutex
	inos, ids := map[meta.Ino]bool{}, map[meta.SliceID]bool{}
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				ent, err := c.e.Mknod(c.ctx, meta.MknodRequest{Parent: meta.RootIno, Name: fmt.Sprintf("%d-%d", i, j), Type: meta.TypeFile, Exclusive: true})
				id, err2 := c.e.NewSliceID(c.ctx)
				if err != nil || err2 != nil {
					t.Errorf("client %d: %v %v", i, err, err2)
					return
				}
				mu.Lock()
				if inos[ent.Ino] || ids[id] {
					t.Errorf("ino %d or slice %d handed out twice", ent.Ino, id)
				}
				inos[ent.Ino], ids[id] = true, true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if names := cs[0].names(meta.RootIno); len(names) != 200 {
		t.Fatalf("%d entries, want 200", len(names))
	}
}

// testRenameCycle races "mv a b/" against "mv b a/": serializable
// transactions must let at most one of them through.
func testRenameCycle(t *testing.T, newClients ClientsFactory) {
	cs := clients(t, newClients, 2)
	a, b := cs[0].dir(meta.RootIno, "a"), cs[0].dir(meta.RootIno, "b")
	for round := range 20 {
		errs := make([]error, 2)
		var wg sync.WaitGroup
		moves := [][2]meta.Entry{{a, b}, {b, a}}
		for i, mv := range moves {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = cs[i].e.Rename(cs[i].ctx, meta.RenameRequest{OldParent: meta.RootIno, OldName: name(mv[0], a),
					NewParent: mv[1].Ino, NewName: name(mv[0], a)})
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil && !isErrno(err, syscall.EINVAL) && !isErrno(err, syscall.ENOENT) {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if errs[0] == nil && errs[1] == nil {
			t.Fatalf("round %d: both renames succeeded: a directory cycle", round)
		}
		moveBack(cs[0], a, b)
	}
}

func name(e, a meta.Entry) string {
	if e.Ino == a.Ino {
		return "a"
	}
	return "b"
}

// moveBack puts a and b back into the root after a round.
func moveBack(v *env, a, b meta.Entry) {
	for _, d := range []meta.Entry{a, b} {
		at := v.attr(d.Ino)
		if at.Parent == meta.RootIno {
			continue
		}
		_, err := v.e.Rename(v.ctx, meta.RenameRequest{OldParent: at.Parent, OldName: name(d, a), NewParent: meta.RootIno, NewName: name(d, a)})
		v.check(err, "move back")
	}
}

// testLinkCounts has clients make and remove subdirectories of one
// directory at once; its link count must come out right.
func testLinkCounts(t *testing.T, newClients ClientsFactory) {
	cs := clients(t, newClients, 3)
	d := cs[0].dir(meta.RootIno, "d")
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 30 {
				name := fmt.Sprintf("%d-%d", i, j)
				if _, err := c.e.Mknod(c.ctx, meta.MknodRequest{Parent: d.Ino, Name: name, Type: meta.TypeDir, Mode: 0o755, Exclusive: true}); err != nil {
					t.Errorf("mkdir: %v", err)
					return
				}
				if j%3 == 0 {
					if err := c.e.Rmdir(c.ctx, d.Ino, name); err != nil {
						t.Errorf("rmdir: %v", err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if a := cs[1].attr(d.Ino); a.Nlink != 2+3*20 {
		t.Fatalf("nlink %d, want %d", a.Nlink, 2+3*20)
	}
	if ck, ok := cs[2].e.(meta.Checker); ok {
		rep, err := ck.Check(cs[2].ctx, false)
		cs[2].check(err, "check")
		for _, p := range rep.Problems {
			if len(p) < 14 || p[:14] != "usage counters" { // other clients' deltas may be unflushed
				t.Errorf("check: %s", p)
			}
		}
	}
}
