package meta

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
}

func TestCheckName(t *testing.T) {
	tests := []struct {
		name string
		want syscall.Errno
	}{
		{"a", 0}, {"with space", 0}, {strings.Repeat("x", MaxNameLen), 0},
		{"", syscall.EINVAL}, {".", syscall.EINVAL}, {"..", syscall.EINVAL},
		{"a/b", syscall.EINVAL}, {"/", syscall.EINVAL}, {"a\x00b", syscall.EINVAL},
		{strings.Repeat("x", MaxNameLen+1), syscall.ENAMETOOLONG},
		{"...", 0},
	}
	for _, tt := range tests {
		if got := errnoOf(CheckName(tt.name)); got != tt.want {
			t.Errorf("CheckName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

var (
	root  = Cred{}
	alice = Cred{Uid: 1000, Gid: 1000}
	bob   = Cred{Uid: 1001, Gid: 1001, Groups: []uint32{1000}}
	carol = Cred{Uid: 1002, Gid: 1002}
)

func file(mode uint16) Attr { return Attr{Type: TypeFile, Mode: mode, Uid: 1000, Gid: 1000} }

func TestCheckAccess(t *testing.T) {
	tests := []struct {
		name string
		c    Cred
		a    Attr
		mask uint32
		want syscall.Errno
	}{
		{"owner read", alice, file(0o400), MayRead, 0},
		{"owner no write", alice, file(0o477), MayWrite, syscall.EACCES},
		{"group via supplementary", bob, file(0o040), MayRead, 0},
		{"group bits win over other", bob, file(0o007), MayRead, syscall.EACCES},
		{"other", carol, file(0o004), MayRead, 0},
		{"other denied", carol, file(0o770), MayRead, syscall.EACCES},
		{"rwx all needed", alice, file(0o600), MayRead | MayWrite | MayExec, syscall.EACCES},
		{"root bypass", root, file(0), MayRead | MayWrite, 0},
		{"root exec needs x", root, file(0o600), MayExec, syscall.EACCES},
		{"root exec any x", root, file(0o001), MayExec, 0},
		{"root exec dir", root, Attr{Type: TypeDir}, MayExec, 0},
		{"trusted", Cred{Uid: 5, Trusted: true}, file(0), MayRead, 0},
		{"empty mask", carol, file(0), 0, 0},
	}
	for _, tt := range tests {
		if got := errnoOf(CheckAccess(tt.c, tt.a, tt.mask)); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCheckSticky(t *testing.T) {
	sticky := Attr{Type: TypeDir, Mode: 0o1777, Uid: 1001}
	plain := Attr{Type: TypeDir, Mode: 0o777, Uid: 1001}
	victim := file(0o644) // owned by alice
	tests := []struct {
		name string
		c    Cred
		dir  Attr
		want syscall.Errno
	}{
		{"not sticky", carol, plain, 0},
		{"entry owner", alice, sticky, 0},
		{"dir owner", bob, sticky, 0},
		{"stranger", carol, sticky, syscall.EPERM},
		{"root", root, sticky, 0},
		{"trusted", Cred{Uid: 9, Trusted: true}, sticky, 0},
	}
	for _, tt := range tests {
		if got := errnoOf(CheckSticky(tt.c, tt.dir, victim)); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestNewOwner(t *testing.T) {
	sgidDir := Attr{Type: TypeDir, Mode: 0o2775, Gid: 50}
	tests := []struct {
		name       string
		c          Cred
		parent     Attr
		typ        Type
		mode       uint16
		wantGid    uint32
		wantMode   uint16
		wantUidSet uint32
	}{
		{"plain", alice, Attr{Type: TypeDir, Mode: 0o755, Gid: 7}, TypeFile, 0o644, 1000, 0o644, 1000},
		{"sgid dir file", alice, sgidDir, TypeFile, 0o644, 50, 0o644, 1000},
		{"sgid dir subdir", alice, sgidDir, TypeDir, 0o755, 50, 0o2755, 1000},
		{"sgid file not member", alice, sgidDir, TypeFile, 0o2755, 50, 0o755, 1000},
		{"sgid file member", Cred{Uid: 3, Gid: 50}, sgidDir, TypeFile, 0o2755, 50, 0o2755, 3},
		{"sgid file root", root, sgidDir, TypeFile, 0o2755, 50, 0o2755, 0},
	}
	for _, tt := range tests {
		uid, gid, mode := NewOwner(tt.c, tt.parent, tt.typ, tt.mode)
		if uid != tt.wantUidSet || gid != tt.wantGid || mode != tt.wantMode {
			t.Errorf("%s: got %d %d %o, want %d %d %o", tt.name, uid, gid, mode, tt.wantUidSet, tt.wantGid, tt.wantMode)
		}
	}
}

func TestApplySetattr(t *testing.T) {
	const now = 777
	tests := []struct {
		name  string
		c     Cred
		a     Attr
		req   SetattrRequest
		want  syscall.Errno
		check func(Attr) bool
	}{
		{"chmod owner", alice, file(0o644), SetattrRequest{Valid: SetMode, Mode: 0o600}, 0,
			func(a Attr) bool { return a.Mode == 0o600 && a.Ctime == now }},
		{"chmod stranger", carol, file(0o644), SetattrRequest{Valid: SetMode, Mode: 0o600}, syscall.EPERM, nil},
		{"chmod root", root, file(0o644), SetattrRequest{Valid: SetMode, Mode: 0o7777}, 0,
			func(a Attr) bool { return a.Mode == 0o7777 }},
		{"chmod sgid not in group", alice, Attr{Type: TypeFile, Uid: 1000, Gid: 5}, SetattrRequest{Valid: SetMode, Mode: 0o2755}, 0,
			func(a Attr) bool { return a.Mode == 0o755 }},
		{"chmod sgid in group", alice, file(0), SetattrRequest{Valid: SetMode, Mode: 0o2755}, 0,
			func(a Attr) bool { return a.Mode == 0o2755 }},
		{"chown by owner", alice, file(0o644), SetattrRequest{Valid: SetUid, Uid: 1001}, syscall.EPERM, nil},
		{"chown to self", alice, file(0o644), SetattrRequest{Valid: SetUid, Uid: 1000}, 0, nil},
		{"chown root", root, file(0o6755), SetattrRequest{Valid: SetUid, Uid: 1001}, 0,
			func(a Attr) bool { return a.Uid == 1001 && a.Mode == 0o755 }},
		{"chown keeps sgid without group x", root, file(0o6745), SetattrRequest{Valid: SetUid, Uid: 1}, 0,
			func(a Attr) bool { return a.Mode == 0o2745 }},
		{"chown dir keeps bits", root, Attr{Type: TypeDir, Mode: 0o2755}, SetattrRequest{Valid: SetUid, Uid: 1}, 0,
			func(a Attr) bool { return a.Mode == 0o2755 }},
		{"chgrp member", bob, Attr{Type: TypeFile, Uid: 1001, Gid: 1001, Mode: 0o4755}, SetattrRequest{Valid: SetGid, Gid: 1000}, 0,
			func(a Attr) bool { return a.Gid == 1000 && a.Mode == 0o755 }},
		{"chgrp non-member", alice, file(0o644), SetattrRequest{Valid: SetGid, Gid: 1002}, syscall.EPERM, nil},
		{"chgrp non-owner", bob, file(0o644), SetattrRequest{Valid: SetGid, Gid: 1000}, syscall.EPERM, nil},
		{"utimes explicit owner", alice, file(0), SetattrRequest{Valid: SetAtime | SetMtime, Atime: 5, Mtime: 6}, 0,
			func(a Attr) bool { return a.Atime == 5 && a.Mtime == 6 && a.Ctime == now }},
		{"utimes explicit stranger", carol, file(0o666), SetattrRequest{Valid: SetMtime, Mtime: 6}, syscall.EPERM, nil},
		{"utimes now writer", carol, file(0o666), SetattrRequest{Valid: SetAtimeNow | SetMtimeNow}, 0,
			func(a Attr) bool { return a.Atime == now && a.Mtime == now }},
		{"utimes now no write", carol, file(0o644), SetattrRequest{Valid: SetMtimeNow}, syscall.EACCES, nil},
		{"trusted", Cred{Uid: 9, Trusted: true}, file(0o6755), SetattrRequest{Valid: SetUid | SetMode, Uid: 3, Mode: 0o6700}, 0,
			func(a Attr) bool { return a.Uid == 3 && a.Mode == 0o6700 }},
		{"nothing", carol, file(0), SetattrRequest{}, 0, func(a Attr) bool { return a.Ctime == 0 }},
	}
	for _, tt := range tests {
		got, err := ApplySetattr(tt.c, tt.a, tt.req, now)
		if errnoOf(err) != tt.want || (err != nil) != (tt.want != 0) {
			t.Errorf("%s: err %v, want %v", tt.name, err, tt.want)
			continue
		}
		if tt.check != nil && !tt.check(got) {
			t.Errorf("%s: unexpected result %+v", tt.name, got)
		}
	}
}

func TestCheckRename(t *testing.T) {
	dir, fil := Attr{Type: TypeDir, Mode: 0o755}, Attr{Type: TypeFile, Mode: 0o644}
	aliceDir := Attr{Type: TypeDir, Mode: 0o755, Uid: 1000, Gid: 1000}
	sticky := Attr{Type: TypeDir, Mode: 0o1777, Uid: 1001}
	tests := []struct {
		name string
		r    RenameCheck
		want syscall.Errno
	}{
		{"to new name", RenameCheck{Src: fil}, 0},
		{"file over file", RenameCheck{Src: fil, Dst: &fil}, 0},
		{"dir over empty dir", RenameCheck{Src: dir, Dst: &dir, DstEmpty: true}, 0},
		{"dir over full dir", RenameCheck{Src: dir, Dst: &dir}, syscall.ENOTEMPTY},
		{"dir over file", RenameCheck{Src: dir, Dst: &fil}, syscall.ENOTDIR},
		{"file over dir", RenameCheck{Src: fil, Dst: &dir, DstEmpty: true}, syscall.EISDIR},
		{"own subtree", RenameCheck{Src: dir, IntoOwnSubtree: true}, syscall.EINVAL},
		{"noreplace", RenameCheck{Flags: RenameNoReplace, Src: fil, Dst: &fil}, syscall.EEXIST},
		{"noreplace free", RenameCheck{Flags: RenameNoReplace, Src: fil}, 0},
		{"exchange", RenameCheck{Flags: RenameExchange, Src: dir, Dst: &fil}, 0},
		{"exchange missing", RenameCheck{Flags: RenameExchange, Src: fil}, syscall.ENOENT},
		{"exchange subtree", RenameCheck{Flags: RenameExchange, Src: dir, Dst: &dir, IntoOwnSubtree: true}, syscall.EINVAL},
		{"exchange onto ancestor", RenameCheck{Flags: RenameExchange, Src: fil, Dst: &dir, DstIsAncestor: true}, syscall.EINVAL},
		{"onto ancestor", RenameCheck{Src: fil, Dst: &dir, DstIsAncestor: true}, syscall.ENOTEMPTY},
		{"noreplace before subtree", RenameCheck{Flags: RenameNoReplace, Src: dir, Dst: &fil, IntoOwnSubtree: true}, syscall.EEXIST},
		{"subtree before permission", RenameCheck{Cred: carol, Src: dir, IntoOwnSubtree: true}, syscall.EINVAL},
		{"both flags", RenameCheck{Flags: RenameExchange | RenameNoReplace, Src: fil, Dst: &fil}, syscall.EINVAL},
		{"whiteout", RenameCheck{Flags: RenameWhiteout, Src: fil}, syscall.EINVAL},
		{"unknown flag", RenameCheck{Flags: 64, Src: fil}, syscall.EINVAL},
		{"source dir not writable", RenameCheck{Cred: carol, SrcDir: dir, DstDir: aliceDir, Src: fil}, syscall.EACCES},
		{"target dir not writable", RenameCheck{Cred: alice, SrcDir: aliceDir, DstDir: dir, Src: fil}, syscall.EACCES},
		{"permission before type", RenameCheck{Cred: carol, SrcDir: aliceDir, DstDir: aliceDir, Src: dir, Dst: &fil}, syscall.EACCES},
		{"sticky source", RenameCheck{Cred: carol, SrcDir: sticky, DstDir: sticky, SameParent: true, Src: file(0o644)}, syscall.EPERM},
		{"sticky target", RenameCheck{Cred: alice, SrcDir: sticky, DstDir: sticky, SameParent: true, Src: file(0o644),
			Dst: &Attr{Type: TypeDir, Uid: 1002}}, syscall.EPERM},
		{"sticky before type", RenameCheck{Cred: alice, SrcDir: sticky, DstDir: sticky, SameParent: true, Src: file(0o644),
			Dst: &Attr{Type: TypeDir, Uid: 1002}, DstEmpty: true}, syscall.EPERM},
		{"moved dir not writable", RenameCheck{Cred: alice, SrcDir: aliceDir, DstDir: aliceDir, Src: Attr{Type: TypeDir, Mode: 0o555, Uid: 1000}}, syscall.EACCES},
		{"moved dir within parent", RenameCheck{Cred: alice, SrcDir: aliceDir, DstDir: aliceDir, SameParent: true, Src: Attr{Type: TypeDir, Mode: 0o555, Uid: 1000}}, 0},
	}
	for _, tt := range tests {
		if tt.r.SrcDir.Type == 0 {
			tt.r.SrcDir = dir
		}
		if tt.r.DstDir.Type == 0 {
			tt.r.DstDir = dir
		}
		if got := errnoOf(CheckRename(tt.r)); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCheckRemove(t *testing.T) {
	sticky := Attr{Type: TypeDir, Mode: 0o1777, Uid: 1001}
	tests := []struct {
		name   string
		c      Cred
		dir    Attr
		victim Attr
		rmdir  bool
		want   syscall.Errno
	}{
		{"unlink file", alice, sticky, file(0), false, 0},
		{"unlink dir", alice, sticky, Attr{Type: TypeDir, Uid: 1000}, false, syscall.EISDIR},
		{"rmdir file", alice, sticky, file(0), true, syscall.ENOTDIR},
		{"sticky before type", carol, sticky, Attr{Type: TypeDir, Uid: 1000}, false, syscall.EPERM},
		{"permission first", carol, Attr{Type: TypeDir, Mode: 0o755}, file(0), true, syscall.EACCES},
	}
	for _, tt := range tests {
		if got := errnoOf(CheckRemove(tt.c, tt.dir, tt.victim, tt.rmdir)); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCheckXattr(t *testing.T) {
	if CheckXattr("user.a", make([]byte, MaxXattrValue)) != nil {
		t.Error("max value refused")
	}
	if errnoOf(CheckXattr("user.a", make([]byte, MaxXattrValue+1))) != syscall.E2BIG {
		t.Error("oversized value accepted")
	}
	if errnoOf(CheckXattr("", nil)) != syscall.ERANGE || errnoOf(CheckXattr(strings.Repeat("n", 256), nil)) != syscall.ERANGE {
		t.Error("bad names accepted")
	}
}

func TestKillSuidgid(t *testing.T) {
	root, member, other := Cred{Uid: 0, Gid: 0}, Cred{Uid: 7, Gid: 5}, Cred{Uid: 8, Gid: 9}
	file := func(mode uint16) Attr { return Attr{Type: TypeFile, Mode: mode, Gid: 5} }
	cases := []struct {
		c    Cred
		a    Attr
		want uint16
	}{
		{other, file(0o6777), 0o777},  // setuid, and setgid with group exec
		{member, file(0o6777), 0o777}, // group exec: setgid goes for a member too
		{member, file(0o2666), 0o2666},
		{other, file(0o2666), 0o666}, // not in the group: setgid goes
		{root, file(0o2666), 0o2666},
		{root, file(0o4755), 0o755},
		{other, Attr{Type: TypeDir, Mode: 0o6777, Gid: 5}, 0o6777},
	}
	for _, tc := range cases {
		if got := KillSuidgid(tc.c, tc.a); got != tc.want {
			t.Errorf("KillSuidgid(%+v, mode %o) = %o, want %o", tc.c, tc.a.Mode, got, tc.want)
		}
		a, err := ApplySetattr(tc.c, tc.a, SetattrRequest{Valid: SetKillSuidgid}, 1)
		if err != nil || a.Mode != tc.want {
			t.Errorf("ApplySetattr(SetKillSuidgid) by %+v on mode %o = %o, %v; want %o", tc.c, tc.a.Mode, a.Mode, err, tc.want)
		}
	}
}
