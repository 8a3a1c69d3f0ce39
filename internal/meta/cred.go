package meta

import "context"

// Cred is the identity an operation runs as.
type Cred struct {
	Uid    uint32
	Gid    uint32
	Groups []uint32 // supplementary groups
	// Trusted means permission checks were already made by the caller
	// (the kernel, for a FUSE mount with default_permissions); the engine
	// then only uses Uid and Gid to own new inodes.
	Trusted bool
	// Umask is the creating process's umask, for Mknod (FUSE passes it
	// with each create). The engine applies it to the new inode's mode
	// unless the parent directory has a default ACL, which takes its
	// place. Callers that masked the mode themselves leave it zero.
	Umask uint16
}

type credKey struct{}

// WithCred returns a context whose operations run as c.
func WithCred(ctx context.Context, c Cred) context.Context {
	return context.WithValue(ctx, credKey{}, c)
}

// CredFrom returns the context's credentials; root if it has none.
func CredFrom(ctx context.Context) Cred {
	if c, ok := ctx.Value(credKey{}).(Cred); ok {
		return c
	}
	return Cred{}
}

// InGroup reports whether c has gid as primary or supplementary group.
func (c Cred) InGroup(gid uint32) bool {
	if c.Gid == gid {
		return true
	}
	for _, g := range c.Groups {
		if g == gid {
			return true
		}
	}
	return false
}
