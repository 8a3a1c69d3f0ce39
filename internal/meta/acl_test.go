package meta

import (
	"bytes"
	"reflect"
	"syscall"
	"testing"
)

// named is u::rw-, u:1001:r--, g::r--, g:2000:rw-, m::rw-, o::---.
var named = ACL{
	{Tag: ACLUserObj, Perm: 6}, {Tag: ACLUser, Perm: 4, ID: 1001},
	{Tag: ACLGroupObj, Perm: 4}, {Tag: ACLGroup, Perm: 6, ID: 2000},
	{Tag: ACLMask, Perm: 6}, {Tag: ACLOther, Perm: 0},
}

func minimal(u, g, o uint16) ACL {
	return ACL{{Tag: ACLUserObj, Perm: u}, {Tag: ACLGroupObj, Perm: g}, {Tag: ACLOther, Perm: o}}
}

func TestACLRoundTrip(t *testing.T) {
	for _, acl := range []ACL{named, minimal(7, 5, 0)} {
		got, err := DecodeACL(acl.Encode())
		if err != nil || !reflect.DeepEqual(got, acl) {
			t.Errorf("DecodeACL(Encode(%v)) = %v, %v", acl, got, err)
		}
	}
	// The kernel's own encoding of u::rw-,g::r--,o::r--.
	kernel := []byte{2, 0, 0, 0, 1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff,
		4, 0, 4, 0, 0xff, 0xff, 0xff, 0xff, 0x20, 0, 4, 0, 0xff, 0xff, 0xff, 0xff}
	acl, err := DecodeACL(kernel)
	if err != nil || !reflect.DeepEqual(acl, minimal(6, 4, 4)) {
		t.Fatalf("DecodeACL(kernel) = %v, %v", acl, err)
	}
	if !bytes.Equal(acl.Encode(), kernel) {
		t.Errorf("Encode = %x, want %x", acl.Encode(), kernel)
	}
	if acl, err := DecodeACL([]byte{2, 0, 0, 0}); acl != nil || err != nil {
		t.Errorf("empty ACL = %v, %v; want nil, nil", acl, err)
	}
}

func TestDecodeACLInvalid(t *testing.T) {
	enc := func(acl ACL) []byte { return acl.Encode() }
	bad := map[string][]byte{
		"empty":        nil,
		"short header": {2, 0},
		"version":      append([]byte{1, 0, 0, 0}, enc(minimal(6, 4, 4))[4:]...),
		"torn entry":   enc(minimal(6, 4, 4))[:20],
		"perm bits":    enc(ACL{{Tag: ACLUserObj, Perm: 8}, {Tag: ACLGroupObj}, {Tag: ACLOther}}),
		"order":        enc(ACL{{Tag: ACLGroupObj}, {Tag: ACLUserObj}, {Tag: ACLOther}}),
		"no other":     enc(ACL{{Tag: ACLUserObj}, {Tag: ACLGroupObj}}),
		"two owners":   enc(ACL{{Tag: ACLUserObj}, {Tag: ACLUserObj}, {Tag: ACLGroupObj}, {Tag: ACLOther}}),
		"no mask": enc(ACL{{Tag: ACLUserObj}, {Tag: ACLUser, ID: 5},
			{Tag: ACLGroupObj}, {Tag: ACLOther}}),
		"same user": enc(ACL{{Tag: ACLUserObj}, {Tag: ACLUser, ID: 5}, {Tag: ACLUser, ID: 5},
			{Tag: ACLGroupObj}, {Tag: ACLMask}, {Tag: ACLOther}}),
		"unknown tag": enc(ACL{{Tag: ACLUserObj}, {Tag: 0x03}, {Tag: ACLGroupObj}, {Tag: ACLOther}}),
	}
	for name, b := range bad {
		if _, err := DecodeACL(b); errnoOf(err) != syscall.EINVAL {
			t.Errorf("%s: DecodeACL = %v, want EINVAL", name, err)
		}
	}
}

func FuzzDecodeACL(f *testing.F) {
	f.Add(named.Encode())
	f.Add(minimal(7, 0, 0).Encode())
	f.Add([]byte{2, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		acl, err := DecodeACL(b)
		if err != nil {
			if errnoOf(err) != syscall.EINVAL {
				t.Fatalf("DecodeACL error %v, want EINVAL", err)
			}
			return
		}
		if acl == nil {
			return
		}
		again, err := DecodeACL(acl.Encode())
		if err != nil || !reflect.DeepEqual(again, acl) {
			t.Fatalf("re-decode of %v = %v, %v", acl, again, err)
		}
		_ = acl.Mode(0o7777)
		_ = acl.Chmod(0o640)
	})
}

func TestACLModeAndChmod(t *testing.T) {
	if m := named.Mode(0o2777); m != 0o2660 {
		t.Errorf("Mode = %o, want 2660 (group bits from the mask)", m)
	}
	if m := minimal(7, 5, 1).Mode(0o1000); m != 0o1751 {
		t.Errorf("Mode = %o, want 1751", m)
	}
	c := named.Chmod(0o750)
	want := ACL{
		{Tag: ACLUserObj, Perm: 7}, {Tag: ACLUser, Perm: 4, ID: 1001},
		{Tag: ACLGroupObj, Perm: 4}, {Tag: ACLGroup, Perm: 6, ID: 2000},
		{Tag: ACLMask, Perm: 5}, {Tag: ACLOther, Perm: 0},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Chmod(750) = %v, want %v", c, want)
	}
	if named[0].Perm != 6 {
		t.Error("Chmod changed its receiver")
	}
	if named.Minimal() || !minimal(7, 7, 7).Minimal() {
		t.Error("Minimal wrong")
	}
	masked := ACL{{Tag: ACLUserObj}, {Tag: ACLGroupObj, Perm: 7}, {Tag: ACLMask, Perm: 4}, {Tag: ACLOther}}
	if !masked.Minimal() || masked.Mode(0) != 0o040 {
		t.Errorf("a lone mask: Minimal %v Mode %o, want true 040", masked.Minimal(), masked.Mode(0))
	}
}

func TestInherit(t *testing.T) {
	if m, acl := Inherit(nil, 0o666, 0o022); m != 0o644 || acl != nil {
		t.Errorf("no default ACL: %o %v, want 644 and no ACL", m, acl)
	}
	// The umask is ignored; the create mode cuts the owner, mask, other.
	m, acl := Inherit(named, 0o640, 0o077)
	want := ACL{
		{Tag: ACLUserObj, Perm: 6}, {Tag: ACLUser, Perm: 4, ID: 1001},
		{Tag: ACLGroupObj, Perm: 4}, {Tag: ACLGroup, Perm: 6, ID: 2000},
		{Tag: ACLMask, Perm: 4}, {Tag: ACLOther, Perm: 0},
	}
	if m != 0o640 || !reflect.DeepEqual(acl, want) {
		t.Errorf("Inherit(named, 640) = %o %v, want 640 %v", m, acl, want)
	}
	if m, acl := Inherit(minimal(7, 5, 5), 0o2777, 0o077); m != 0o2755 || acl != nil {
		t.Errorf("minimal default: %o %v, want 2755 and no ACL", m, acl)
	}
}

func TestCheckACLAccess(t *testing.T) {
	file := Attr{Type: TypeFile, Mode: named.Mode(0), Uid: 1000, Gid: 1000}
	tests := []struct {
		name string
		c    Cred
		mask uint32
		want error
	}{
		{"owner reads", Cred{Uid: 1000, Gid: 9}, MayRead | MayWrite, nil},
		{"owner exec", Cred{Uid: 1000, Gid: 9}, MayExec, syscall.EACCES},
		{"named user reads", Cred{Uid: 1001, Gid: 9}, MayRead, nil},
		{"named user writes", Cred{Uid: 1001, Gid: 9}, MayWrite, syscall.EACCES},
		{"owning group", Cred{Uid: 5, Gid: 1000}, MayRead, nil},
		{"owning group writes", Cred{Uid: 5, Gid: 1000}, MayWrite, syscall.EACCES},
		{"named group writes", Cred{Uid: 5, Gid: 9, Groups: []uint32{2000}}, MayWrite, nil},
		{"either group", Cred{Uid: 5, Gid: 1000, Groups: []uint32{2000}}, MayWrite, nil},
		{"group matched, no other", Cred{Uid: 5, Gid: 1000}, MayExec, syscall.EACCES},
		{"other", Cred{Uid: 5, Gid: 9}, MayRead, syscall.EACCES},
		{"root", root, MayRead | MayWrite, nil},
		{"trusted", Cred{Uid: 5, Trusted: true}, MayWrite, nil},
	}
	for _, tt := range tests {
		if got := CheckACLAccess(tt.c, file, named, tt.mask); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	// The mask limits the named user: rw- entry under an r-- mask.
	tight := named.Chmod(0o640)
	if err := CheckACLAccess(Cred{Uid: 5, Gid: 9, Groups: []uint32{2000}}, file, tight, MayWrite); err != syscall.EACCES {
		t.Errorf("named group under mask r--: %v, want EACCES", err)
	}
	// The mask limits a named user: rw- entry under an r-- mask.
	limited := ACL{{Tag: ACLUserObj, Perm: 6}, {Tag: ACLUser, Perm: 6, ID: 1001},
		{Tag: ACLGroupObj, Perm: 4}, {Tag: ACLMask, Perm: 4}, {Tag: ACLOther}}
	if err := CheckACLAccess(Cred{Uid: 1001, Gid: 9}, file, limited, MayWrite); err != syscall.EACCES {
		t.Errorf("named user rw- under mask r--: write %v, want EACCES", err)
	}
	// A nil ACL is the mode.
	if err := CheckACLAccess(Cred{Uid: 1001, Gid: 9}, file, nil, MayRead); err != syscall.EACCES {
		t.Errorf("no ACL: %v, want EACCES", err)
	}
}
