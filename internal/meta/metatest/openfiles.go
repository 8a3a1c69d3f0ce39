package metatest

import (
	"syscall"
	"testing"
	"time"

	"shoal/internal/meta"
)

// openClients makes two clients with sessions that are OpenTrackers whose
// vfs-side check says "not open here", as two idle mounts would register:
// what keeps a file alive is the engine's own record of the opens.
func openClients(t *testing.T, newClients ClientsFactory) (a, b *env, ta, tb meta.OpenTracker) {
	t.Helper()
	cs := clients(t, newClients, 2)
	a, b = cs[0], cs[1]
	ta, ok := a.e.(meta.OpenTracker)
	if !ok {
		t.Skip("engine has no OpenTracker")
	}
	tb = b.e.(meta.OpenTracker)
	for i, c := range cs {
		s, ok := c.e.(meta.Sessions)
		if !ok {
			t.Skip("engine has no Sessions")
		}
		_, err := s.BeginSession(c.ctx, meta.SessionInfo{Host: string(rune('a' + i))})
		c.check(err, "begin session")
		c.e.(meta.OpenTracker).SetOpenCheck(func(meta.Ino) bool { return false })
	}
	return a, b, ta, tb
}

// removeOn unlinks name on client c and purges as the vfs does when it
// does not hold the inode: the purge must leave an inode open elsewhere.
func removeOn(c *env, rm meta.Removed, err error, what string) {
	c.t.Helper()
	c.check(err, what)
	if rm.Orphan {
		c.check(c.e.Purge(c.ctx, rm.Ino), "purge after "+what)
	}
}

// wantAlive checks that ino and its data are still there for c.
func wantAlive(c *env, ino meta.Ino, s meta.Slice, what string) {
	c.t.Helper()
	a, err := c.e.Getattr(c.ctx, ino)
	c.check(err, "getattr of "+what)
	if a.Nlink != 0 || a.Length != uint64(s.Len) {
		c.t.Fatalf("%s: %+v", what, a)
	}
	if got := c.view(ino, 0, 0, s.Len); len(got) != 1 || got[0].ID != s.ID {
		c.t.Fatalf("%s: chunk %+v, want slice %d", what, got, s.ID)
	}
	c.wantFreed(s, false)
}

// wantGone waits up to a few seconds (a release may be flushed in the
// background) for ino to be purged, its data freed.
func wantGone(c *env, ino meta.Ino, s meta.Slice, what string) {
	c.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := c.e.Getattr(c.ctx, ino)
		if isErrno(err, syscall.ENOENT) {
			break
		}
		c.check(err, "getattr of "+what)
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: inode %d still exists", what, ino)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.wantFreed(s, true)
	if sc, ok := c.e.(meta.Scanner); ok {
		orphans, err := sc.Orphans(c.ctx, 0)
		c.check(err, "orphans")
		for _, o := range orphans {
			if o.Ino == ino {
				c.t.Fatalf("%s: orphan mark of %d left", what, ino)
			}
		}
	}
}

// testOpenFiles checks meta.OpenTracker across clients: a file open on
// one client outlives the unlink, or the rename over it, on another
// until its last release there, or until the holder's session ends or is
// reclaimed.
func testOpenFiles(t *testing.T, newClients ClientsFactory) {
	a, b, ta, _ := openClients(t, newClients)
	// Created open on a (Mknod with Open), unlinked on b.
	f, err := a.e.Mknod(a.ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "f", Type: meta.TypeFile, Mode: 0o644, Exclusive: true, Open: true})
	a.check(err, "create open")
	sf := a.write(f.Ino, 0, 100)
	rm, err := b.e.Unlink(b.ctx, meta.RootIno, "f")
	removeOn(b, rm, err, "unlink on b")
	if !rm.Orphan {
		t.Fatal("unlink of a file open on another client did not keep it")
	}
	// An existing file opened on a (Open, twice), renamed over on b.
	g := a.file(meta.RootIno, "g")
	sg := a.write(g.Ino, 0, 50)
	for range 2 {
		_, err = ta.Open(a.ctx, g.Ino, meta.MayRead)
		a.check(err, "open")
	}
	b.file(meta.RootIno, "new")
	rm, err = b.e.Rename(b.ctx, meta.RenameRequest{OldParent: meta.RootIno, OldName: "new", NewParent: meta.RootIno, NewName: "g"})
	removeOn(b, rm, err, "rename over on b")
	wantAlive(a, f.Ino, sf, "unlinked file open on a")
	wantAlive(b, g.Ino, sg, "renamed-over file open on a, seen from b")
	// a keeps writing to both.
	sf2 := a.write(f.Ino, 100, 10)
	if at := a.attr(f.Ino); at.Length != 110 {
		t.Fatalf("write to the unlinked file: %+v", at)
	}
	a.check(ta.Release(a.ctx, g.Ino), "release g")
	wantAlive(a, g.Ino, sg, "renamed-over file after one of two releases")
	a.check(ta.Release(a.ctx, f.Ino), "release f")
	a.check(ta.Release(a.ctx, g.Ino), "release g again")
	wantGone(b, f.Ino, sf, "unlinked file after its release")
	b.wantFreed(sf2, true)
	wantGone(b, g.Ino, sg, "renamed-over file after its releases")

	// Created open and released on a (and reopened there, or not), then
	// opened on b (by open, and by a create of the existing name): a's
	// unlink must see b's records.
	tb := b.e.(meta.OpenTracker)
	for i := range 4 {
		byCreate, reopen := i%2 == 1, i >= 2
		h, err := a.e.Mknod(a.ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "h", Type: meta.TypeFile, Mode: 0o644, Exclusive: true, Open: true})
		a.check(err, "create open on a")
		sh := a.write(h.Ino, 0, 20)
		a.check(ta.Release(a.ctx, h.Ino), "release on a")
		if reopen {
			_, err = ta.Open(a.ctx, h.Ino, meta.MayRead)
			a.check(err, "reopen on a")
			a.check(ta.Release(a.ctx, h.Ino), "release of the reopen on a")
		}
		if byCreate {
			_, err = b.e.Mknod(b.ctx, meta.MknodRequest{Parent: meta.RootIno, Name: "h", Type: meta.TypeFile, Mode: 0o644, Open: true})
		} else {
			_, err = tb.Open(b.ctx, h.Ino, meta.MayRead)
		}
		b.check(err, "open on b")
		rm, err = a.e.Unlink(a.ctx, meta.RootIno, "h")
		removeOn(a, rm, err, "unlink on the creator")
		wantAlive(b, h.Ino, sh, "file the creator unlinked while b holds it")
		b.check(tb.Release(b.ctx, h.Ino), "release on b")
		wantGone(a, h.Ino, sh, "file after b's release")
	}
}

// testOpenFilesSessionEnd checks that the end of the holder's session,
// or its reclaim by another client, purges what it held open, and that
// the end of the unlinker's session does not.
func testOpenFilesSessionEnd(t *testing.T, newClients ClientsFactory) {
	a, b, ta, _ := openClients(t, newClients)
	open := func(name string) (meta.Entry, meta.Slice) {
		e := a.file(meta.RootIno, name)
		s := a.write(e.Ino, 0, 10)
		_, err := ta.Open(a.ctx, e.Ino, meta.MayRead|meta.MayWrite)
		a.check(err, "open "+name)
		rm, err := b.e.Unlink(b.ctx, meta.RootIno, name)
		removeOn(b, rm, err, "unlink "+name)
		return e, s
	}
	x, sx := open("x")
	y, sy := open("y")
	// b (which made the orphans) ends: they stay, a holds them.
	sb := b.e.(meta.Sessions)
	b.check(sb.EndSession(b.ctx), "end b's session")
	wantAlive(a, x.Ino, sx, "orphan open on a after the unlinker's session ended")
	_, err := sb.BeginSession(b.ctx, meta.SessionInfo{Host: "b2"})
	b.check(err, "new session on b")
	// a ends: what it held goes.
	sa := a.e.(meta.Sessions)
	a.check(sa.EndSession(a.ctx), "end a's session")
	wantGone(b, x.Ino, sx, "orphan once its holder's session ended")
	wantGone(b, y.Ino, sy, "second orphan once its holder's session ended")

	// a again, silent this time: b reclaims it.
	_, err = sa.BeginSession(a.ctx, meta.SessionInfo{Host: "a2", Timeout: 10 * time.Millisecond})
	a.check(err, "new session on a")
	z, sz := open("z")
	time.Sleep(20 * time.Millisecond)
	b.check(sb.Heartbeat(b.ctx), "heartbeat b")
	wantAlive(b, z.Ino, sz, "orphan open on a live session")
	n, err := sb.ReclaimSessions(b.ctx, 10*time.Millisecond)
	b.check(err, "reclaim")
	if n != 1 {
		t.Fatalf("reclaimed %d sessions, want 1", n)
	}
	wantGone(b, z.Ino, sz, "orphan once its holder's session was reclaimed")
}
