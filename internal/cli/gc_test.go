package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"shoal/internal/data"
	"shoal/internal/gc"
	"shoal/internal/meta"
	"shoal/internal/object"
	"shoal/internal/object/objopen"
	"shoal/internal/volume"
)

// gcVolume is a real SQLite + file-store volume with some files.
type gcVolume struct {
	t       *testing.T
	ctx     context.Context
	url     string
	format  meta.Format
	store   object.Store
	content map[string][]byte
}

func newGCVolume(t *testing.T) *gcVolume {
	ctx := context.Background()
	url := "sqlite://" + filepath.Join(t.TempDir(), "meta.db")
	f, err := volume.Format(ctx, url, volume.FormatOptions{BlockSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	store, err := objopen.Open(ctx, f.Storage, f.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	v := &gcVolume{t: t, ctx: ctx, url: url, format: f, store: store, content: map[string][]byte{}}
	vol, err := volume.Open(ctx, url, volume.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, size := range []int{1, 5000, 64 << 10, 200<<10 + 3} {
		name := fmt.Sprintf("f%d", i)
		v.content[name] = bytes.Repeat([]byte{byte('a' + i)}, size)
		e, res, err := vol.FS.Create(ctx, meta.RootIno, name, 0o644, syscall.O_RDWR)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := vol.FS.Write(ctx, res.Fh, 0, v.content[name]); err != nil {
			t.Fatal(err)
		}
		if err := vol.FS.Release(ctx, res.Fh); err != nil {
			t.Fatalf("release %s (inode %d): %v", name, e.Ino, err)
		}
	}
	if err := vol.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return v
}

// checkFiles reopens the volume and reads every file back.
func (v *gcVolume) checkFiles() {
	v.t.Helper()
	vol, err := volume.Open(v.ctx, v.url, volume.Options{})
	if err != nil {
		v.t.Fatal(err)
	}
	defer vol.Close(v.ctx)
	for name, want := range v.content {
		e, err := vol.Engine.Lookup(v.ctx, meta.RootIno, name)
		if err != nil {
			v.t.Fatal(err)
		}
		res, err := vol.FS.Open(v.ctx, e.Ino, syscall.O_RDONLY)
		if err != nil {
			v.t.Fatal(err)
		}
		got := make([]byte, len(want)+10)
		n, err := vol.FS.Read(v.ctx, res.Fh, 0, got)
		vol.FS.Release(v.ctx, res.Fh)
		if err != nil || !bytes.Equal(got[:n], want) {
			v.t.Fatalf("%s reads %d bytes, %v; want %d", name, n, err, len(want))
		}
	}
}

// gc runs the command and returns stdout and the error.
func (v *gcVolume) gc(args ...string) (string, error) {
	cmd := newGCCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append(args, v.url))
	err := cmd.ExecuteContext(v.ctx)
	return out.String(), err
}

func (v *gcVolume) report(args ...string) *gc.Report {
	v.t.Helper()
	out, err := v.gc(append(args, "--json")...)
	if err != nil {
		v.t.Fatalf("gc %v: %v\n%s", args, err, out)
	}
	var r gc.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		v.t.Fatalf("gc --json output: %v\n%s", err, out)
	}
	return &r
}

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if err != nil {
		return ExitError
	}
	return ExitOK
}

func TestGCCommand(t *testing.T) {
	v := newGCVolume(t)
	strays := []string{data.BlockKey(987654321, 0, 4096), data.BlockKey(987654322, 3, 100)}
	for _, k := range strays {
		if err := v.store.Put(v.ctx, k, bytes.NewReader(make([]byte, 64)), 64); err != nil {
			t.Fatal(err)
		}
	}

	r := v.report()
	if r.Live.Objects != 7 || r.Young.Objects != 2 || r.Leaked.Objects != 0 || r.Deleted.Objects != 0 {
		t.Fatalf("default grace: %+v", r)
	}
	r = v.report("--dry-run", "--grace", "0")
	if r.Leaked.Objects != 2 || r.Deleted.Objects != 0 || !r.DryRun {
		t.Fatalf("dry run: %+v", r)
	}
	out, err := v.gc("--grace", "0", "--progress=always")
	if err != nil {
		t.Fatalf("gc: %v\n%s", err, out)
	}
	for _, want := range []string{"leaked    2 objects, 128 B", "Deleted     2 objects, 128 B leaked"} {
		if !strings.Contains(out, want) {
			t.Fatalf("summary lacks %q:\n%s", want, out)
		}
	}
	for _, k := range strays {
		if _, err := v.store.Head(v.ctx, k); !errors.Is(err, object.ErrNotExist) {
			t.Fatalf("stray %s survived: %v", k, err)
		}
	}
	v.checkFiles()
	if r = v.report("--grace", "0"); r.Leaked.Objects != 0 || r.Live.Objects != 7 {
		t.Fatalf("second run: %+v", r)
	}
}

func TestGCCommandDamage(t *testing.T) {
	v := newGCVolume(t)
	infos, err := v.store.List(v.ctx, "chunks/", "", 1)
	if err != nil || len(infos) != 1 {
		t.Fatalf("List = %v, %v", infos, err)
	}
	if err := v.store.Delete(v.ctx, infos[0].Key); err != nil {
		t.Fatal(err)
	}
	out, err := v.gc("--dry-run")
	if exitCode(err) != ExitDamage || !strings.Contains(out, "DAMAGE") || !strings.Contains(out, infos[0].Key) {
		t.Fatalf("gc on a damaged volume: exit %d (%v)\n%s", exitCode(err), err, out)
	}
}

func TestGCCommandUsage(t *testing.T) {
	v := newGCVolume(t)
	if _, err := v.gc("--grace", "-1h"); exitCode(err) != ExitUsage {
		t.Fatalf("negative grace: %v", err)
	}
	if _, err := v.gc("--progress", "sometimes"); exitCode(err) != ExitUsage {
		t.Fatalf("bad --progress: %v", err)
	}
	cmd := newGCCmd()
	cmd.SetArgs([]string{"sqlite://" + filepath.Join(t.TempDir(), "none.db")})
	cmd.SetOut(&bytes.Buffer{})
	if err := cmd.ExecuteContext(v.ctx); exitCode(err) != ExitNotFound {
		t.Fatalf("unformatted volume: exit %d, %v", exitCode(err), err)
	}
}
