package vfs

import (
	"context"

	"shoal/internal/meta"
)

// capsName is the xattr the kernel reads before every write(2) to decide
// whether file capabilities must be dropped (with HANDLE_KILLPRIV_V2, once
// per inode it has not checked yet: before the first write to a file it
// just created). It is answered from the open file's state (loaded once
// per open, like everything close-to-open; known absent after a create
// with O_EXCL, and after an open whose engine read found the inode without
// xattrs: meta.Opened) so a write costs no engine round trip for it.
const capsName = "security.capability"

// Getxattr returns an extended attribute: ENODATA if unset.
func (fs *FS) Getxattr(ctx context.Context, ino meta.Ino, name string) ([]byte, error) {
	if name == capsName {
		if f := fs.openFile(ino); f != nil {
			return f.caps(ctx)
		}
	}
	return fs.engine.Getxattr(ctx, ino, name)
}

// Setxattr sets an extended attribute (flags XATTR_CREATE/XATTR_REPLACE).
// CloneXattr is not stored: it asks for a clone (clone.go).
func (fs *FS) Setxattr(ctx context.Context, ino meta.Ino, name string, value []byte, flags uint32) error {
	if name == CloneXattr {
		return fs.cloneControl(ctx, ino, value)
	}
	defer fs.forgetCaps(ino, name)
	if err := fs.intendXattr(ctx, ino, name, flags&meta.XattrCreate != 0, false); err != nil {
		return err
	}
	return committed(ctx, fs.engine.Setxattr(ctx, ino, name, value, flags))
}

// Listxattr returns the names of ino's extended attributes.
func (fs *FS) Listxattr(ctx context.Context, ino meta.Ino) ([]string, error) {
	return fs.engine.Listxattr(ctx, ino)
}

// Removexattr removes an extended attribute: ENODATA if unset.
func (fs *FS) Removexattr(ctx context.Context, ino meta.Ino, name string) error {
	defer fs.forgetCaps(ino, name)
	if err := fs.intendXattr(ctx, ino, name, false, true); err != nil {
		return err
	}
	return committed(ctx, fs.engine.Removexattr(ctx, ino, name))
}

func (fs *FS) forgetCaps(ino meta.Ino, name string) {
	if name != capsName {
		return
	}
	if f := fs.openFile(ino); f != nil {
		f.mu.Lock()
		f.capsLoaded = false
		f.mu.Unlock()
	}
}

// caps returns the file's security.capability, cached until the next open.
func (f *file) caps(ctx context.Context) ([]byte, error) {
	f.mu.Lock()
	if f.capsLoaded {
		v, err := f.capsValue, f.capsErr
		f.mu.Unlock()
		return v, err
	}
	f.mu.Unlock()
	v, err := f.fs.engine.Getxattr(ctx, f.ino, capsName)
	if err != nil && !isErrno(err) {
		return nil, err // unexpected: do not cache
	}
	f.mu.Lock()
	f.capsValue, f.capsErr, f.capsLoaded = v, err, true
	f.mu.Unlock()
	return v, err
}
