package metatest

import (
	"fmt"
	"sync"
	"syscall"
	"testing"

	"shoal/internal/meta"
)

// openLimited makes a fresh engine formatted with f's limits.
func openLimited(t *testing.T, newEngine Factory, f meta.Format) *env {
	t.Helper()
	e := newEngine(t)
	t.Cleanup(func() { _ = e.Close() })
	v := &env{t: t, e: e, ctx: t.Context()}
	f.Name, f.Storage, f.BlockSize = "quota", "mem", 1<<20
	v.check(e.Format(v.ctx, f, false), "format")
	return v
}

// testVolumeQuota: a volume's inode and space limits refuse growth with
// ENOSPC and change nothing; usage follows unlink and truncate.
func testVolumeQuota(t *testing.T, newEngine Factory) {
	t.Run("Inodes", func(t *testing.T) {
		v := openLimited(t, newEngine, meta.Format{Inodes: 6}) // the root is one
		d := v.dir(meta.RootIno, "d")
		for i := range 4 {
			v.file(d.Ino, fmt.Sprint(i))
		}
		for _, typ := range []meta.Type{meta.TypeFile, meta.TypeDir, meta.TypeSymlink} {
			_, err := v.e.Mknod(v.ctx, meta.MknodRequest{Parent: d.Ino, Name: "over", Type: typ, Mode: 0o644, Target: "t", Exclusive: true})
			v.wantErrno(err, syscall.ENOSPC, fmt.Sprintf("mknod type %d past the inode limit", typ))
		}
		if got := v.names(d.Ino); len(got) != 4 {
			t.Fatalf("entries after refused creates: %v", got)
		}
		rm, err := v.e.Unlink(v.ctx, d.Ino, "0")
		v.check(err, "unlink")
		v.check(v.e.Purge(v.ctx, rm.Ino), "purge")
		v.file(d.Ino, "again") // the freed inode counts again
	})
	t.Run("Space", func(t *testing.T) {
		const limit = 1 << 20
		v := openLimited(t, newEngine, meta.Format{Capacity: limit})
		f := v.file(meta.RootIno, "f")
		v.write(f.Ino, 0, limit/2)
		g := v.file(meta.RootIno, "g")
		v.write(g.Ino, 0, limit/2)
		id, err := v.e.NewSliceID(v.ctx)
		v.check(err, "new slice id")
		_, err = v.e.WriteChunk(v.ctx, f.Ino, 0, meta.Slice{ID: id, Size: 8192, Len: 8192, Pos: limit / 2})
		v.wantErrno(err, syscall.ENOSPC, "write past the capacity")
		v.wantLength(f.Ino, limit/2)
		_, err = v.e.Truncate(v.ctx, f.Ino, limit)
		v.wantErrno(err, syscall.ENOSPC, "truncate past the capacity")
		_, err = v.e.Fallocate(v.ctx, f.Ino, 0, 0, limit)
		v.wantErrno(err, syscall.ENOSPC, "fallocate past the capacity")
		v.write(f.Ino, 0, limit/2) // overwriting grows nothing
		_, err = v.e.Truncate(v.ctx, g.Ino, 0)
		v.check(err, "truncate to 0")
		v.write(f.Ino, limit/2, limit/2) // the truncated space is free again
		rm, err := v.e.Unlink(v.ctx, meta.RootIno, "f")
		v.check(err, "unlink")
		v.check(v.e.Purge(v.ctx, rm.Ino), "purge")
		v.write(g.Ino, 0, limit) // and so is the unlinked file's
	})
}

// limitedClients makes n clients of one volume formatted with f's limits.
func limitedClients(t *testing.T, newClients ClientsFactory, n int, f meta.Format) []*env {
	t.Helper()
	engines := newClients(t, n)
	out := make([]*env, len(engines))
	for i, e := range engines {
		t.Cleanup(func() { _ = e.Close() })
		out[i] = &env{t: t, e: e, ctx: t.Context()}
	}
	f.Name = "quota"
	out[0].check(engines[0].Format(out[0].ctx, f, false), "format")
	for _, c := range out[1:] {
		_, err := c.e.Load(c.ctx)
		c.check(err, "load on another client")
	}
	return out
}

// testQuotaClients: clients writing and creating at once stay within the
// volume's limits plus the bound kvmeta documents (docs/admin.md): per
// other client, two flush thresholds (a sixteenth of the limit each) and
// the operation it has in flight.
func testQuotaClients(t *testing.T, newClients ClientsFactory) {
	t.Run("Space", func(t *testing.T) {
		const limit, piece = 8 << 20, 64 << 10
		cs := limitedClients(t, newClients, 2, meta.Format{Capacity: limit})
		files := untilFull(t, cs, func(c *env, i, j int) error {
			ino := meta.Ino(0)
			if j == 0 {
				ent, err := c.e.Mknod(c.ctx, meta.MknodRequest{Parent: meta.RootIno, Name: fmt.Sprint(i), Type: meta.TypeFile, Mode: 0o644})
				if err != nil {
					return err
				}
				ino = ent.Ino
			} else {
				ent, err := c.e.Lookup(c.ctx, meta.RootIno, fmt.Sprint(i))
				if err != nil {
					return err
				}
				ino = ent.Ino
			}
			id, err := c.e.NewSliceID(c.ctx)
			if err != nil {
				return err
			}
			_, err = c.e.WriteChunk(c.ctx, ino, 0, meta.Slice{ID: id, Size: piece, Len: piece, Pos: uint32(j * piece)})
			return err
		})
		var used uint64
		for i := range files {
			ent, err := cs[0].e.Lookup(cs[0].ctx, meta.RootIno, fmt.Sprint(i))
			cs[0].check(err, "lookup")
			used += ent.Attr.Length
		}
		bound := uint64(len(cs)-1) * (2*limit/16 + piece)
		if used > limit+bound || used <= limit-piece {
			t.Fatalf("clients stored %d bytes; limit %d, bound %d", used, limit, bound)
		}
	})
	t.Run("Inodes", func(t *testing.T) {
		const limit = 300
		cs := limitedClients(t, newClients, 2, meta.Format{Inodes: limit})
		untilFull(t, cs, func(c *env, i, j int) error {
			_, err := c.e.Mknod(c.ctx, meta.MknodRequest{Parent: meta.RootIno, Name: fmt.Sprintf("%d-%d", i, j), Type: meta.TypeFile, Mode: 0o644, Exclusive: true})
			return err
		})
		used := uint64(len(cs[0].names(meta.RootIno))) + 1 // and the root
		bound := uint64(len(cs)-1) * (2*limit/16 + 1)
		if used > limit+bound || used < limit {
			t.Fatalf("clients made %d inodes; limit %d, bound %d", used, limit, bound)
		}
	})
}

// untilFull runs op(client, i, j) for j = 0, 1, … on every client i at
// once until each gets ENOSPC, and returns the number of clients.
func untilFull(t *testing.T, cs []*env, op func(c *env, i, j int) error) int {
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 1<<16; j++ {
				err := op(c, i, j)
				if isErrno(err, syscall.ENOSPC) {
					return
				}
				if err != nil {
					t.Errorf("client %d op %d: %v", i, j, err)
					return
				}
			}
			t.Errorf("client %d never reached the limit", i)
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return len(cs)
}

// testDirQuota: a directory quota refuses growth of its tree with EDQUOT,
// follows unlink and truncate, is counted when set on a non-empty tree,
// refuses renames and links across quota trees with EXDEV, and shows in
// StatfsAt.
func testDirQuota(t *testing.T, newEngine Factory) {
	v := open(t, newEngine)
	qs, ok := v.e.(meta.Quotas)
	if !ok {
		t.Skip("engine has no directory quotas")
	}
	site := v.dir(meta.RootIno, "site")
	sub := v.dir(site.Ino, "sub")
	old := v.file(sub.Ino, "old")
	v.write(old.Ino, 0, 4096)
	q, err := qs.SetQuota(v.ctx, site.Ino, 64<<10, 4)
	v.check(err, "set quota")
	if q.UsedInodes != 2 || q.UsedSpace != 4096 {
		t.Fatalf("quota set on a tree holding a dir and a 4 KiB file: %+v", q)
	}
	f := v.file(sub.Ino, "f")
	v.write(f.Ino, 0, 60<<10)
	id, err := v.e.NewSliceID(v.ctx)
	v.check(err, "new slice id")
	_, err = v.e.WriteChunk(v.ctx, f.Ino, 0, meta.Slice{ID: id, Size: 4096, Len: 4096, Pos: 60 << 10})
	v.wantErrno(err, syscall.EDQUOT, "write past the directory quota")
	_, err = v.e.Truncate(v.ctx, f.Ino, 1<<20)
	v.wantErrno(err, syscall.EDQUOT, "truncate past the directory quota")
	v.file(site.Ino, "g") // the fourth inode
	_, err = v.e.Mknod(v.ctx, meta.MknodRequest{Parent: sub.Ino, Name: "h", Type: meta.TypeFile, Mode: 0o644, Exclusive: true})
	v.wantErrno(err, syscall.EDQUOT, "create past the directory quota")
	v.file(meta.RootIno, "outside") // the rest of the volume is not limited

	st, err := qs.StatfsAt(v.ctx, sub.Ino)
	v.check(err, "statfs at")
	if st.TotalSpace != 64<<10 || st.UsedSpace != 64<<10 || st.TotalInodes != 4 || st.UsedInodes != 4 {
		t.Fatalf("statfs inside the quota tree: %+v", st)
	}
	if st, err = qs.StatfsAt(v.ctx, meta.RootIno); err != nil || st.TotalInodes == 4 {
		t.Fatalf("statfs outside the quota tree: %+v, %v", st, err)
	}

	_, err = v.rename(sub.Ino, meta.RootIno, "f", "f", 0)
	v.wantErrno(err, syscall.EXDEV, "rename out of the quota tree")
	_, err = v.rename(meta.RootIno, site.Ino, "outside", "outside", 0)
	v.wantErrno(err, syscall.EXDEV, "rename into the quota tree")
	_, err = v.e.Link(v.ctx, f.Ino, meta.RootIno, "link")
	v.wantErrno(err, syscall.EXDEV, "link out of the quota tree")
	_, err = v.rename(sub.Ino, site.Ino, "f", "f", 0) // within one tree
	v.check(err, "rename within the quota tree")

	_, err = v.e.Truncate(v.ctx, f.Ino, 0)
	v.check(err, "truncate")
	rm, err := v.e.Unlink(v.ctx, site.Ino, "g")
	v.check(err, "unlink")
	v.check(v.e.Purge(v.ctx, rm.Ino), "purge")
	q, err = qs.GetQuota(v.ctx, site.Ino)
	v.check(err, "get quota")
	if q.UsedInodes != 3 || q.UsedSpace != 4096 {
		t.Fatalf("usage after truncate and unlink: %+v", q)
	}
	v.write(f.Ino, 0, 60<<10) // renamed file: charged to the same tree

	list, err := qs.ListQuotas(v.ctx)
	if err != nil || len(list) != 1 || list[0].Ino != site.Ino {
		t.Fatalf("list quotas: %+v, %v", list, err)
	}
	v.check(qs.DeleteQuota(v.ctx, site.Ino), "delete quota")
	_, err = qs.GetQuota(v.ctx, site.Ino)
	v.wantErrno(err, syscall.ENODATA, "get a deleted quota")
	v.file(sub.Ino, "h") // no limit any more
}

// testDirQuotaClients: a quota set on one client is enforced by another
// once it has read the quota list (Load, or its periodic refresh).
func testDirQuotaClients(t *testing.T, newClients ClientsFactory) {
	cs := clients(t, newClients, 2)
	a, b := cs[0], cs[1]
	qs, ok := a.e.(meta.Quotas)
	if !ok {
		t.Skip("engine has no directory quotas")
	}
	d := a.dir(meta.RootIno, "d")
	_, err := qs.SetQuota(a.ctx, d.Ino, 0, 2)
	a.check(err, "set quota")
	_, err = b.e.Load(b.ctx) // as a new mount would
	b.check(err, "load")
	b.file(d.Ino, "1")
	a.file(d.Ino, "2")
	_, err = b.e.Mknod(b.ctx, meta.MknodRequest{Parent: d.Ino, Name: "3", Type: meta.TypeFile, Mode: 0o644, Exclusive: true})
	b.wantErrno(err, syscall.EDQUOT, "create past the quota on the other client")
}
