package vfs

import (
	"context"

	"shoal/internal/meta"
)

// Getxattr returns an extended attribute: ENODATA if unset.
func (fs *FS) Getxattr(ctx context.Context, ino meta.Ino, name string) ([]byte, error) {
	return fs.engine.Getxattr(ctx, ino, name)
}

// Setxattr sets an extended attribute (flags XATTR_CREATE/XATTR_REPLACE).
func (fs *FS) Setxattr(ctx context.Context, ino meta.Ino, name string, value []byte, flags uint32) error {
	return fs.engine.Setxattr(ctx, ino, name, value, flags)
}

// Listxattr returns the names of ino's extended attributes.
func (fs *FS) Listxattr(ctx context.Context, ino meta.Ino) ([]string, error) {
	return fs.engine.Listxattr(ctx, ino)
}

// Removexattr removes an extended attribute: ENODATA if unset.
func (fs *FS) Removexattr(ctx context.Context, ino meta.Ino, name string) error {
	return fs.engine.Removexattr(ctx, ino, name)
}
