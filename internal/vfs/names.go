package vfs

import (
	"context"

	"shoal/internal/meta"
)

// Mknod creates a regular file, FIFO, socket or device node; mode carries
// the S_IFMT type bits.
func (fs *FS) Mknod(ctx context.Context, parent meta.Ino, name string, mode, rdev uint32) (meta.Entry, error) {
	e, err := fs.engine.Mknod(ctx, meta.MknodRequest{
		Parent: parent, Name: name, Type: meta.TypeFromMode(mode),
		Mode: uint16(mode & 07777), Rdev: rdev, Exclusive: true, Reserved: fs.reserve(ctx),
	})
	return e, committed(ctx, err)
}

// Mkdir creates a directory.
func (fs *FS) Mkdir(ctx context.Context, parent meta.Ino, name string, mode uint32) (meta.Entry, error) {
	e, err := fs.engine.Mknod(ctx, meta.MknodRequest{
		Parent: parent, Name: name, Type: meta.TypeDir, Mode: uint16(mode & 07777), Exclusive: true,
		Reserved: fs.reserve(ctx),
	})
	return e, committed(ctx, err)
}

// Symlink creates a symbolic link to target.
func (fs *FS) Symlink(ctx context.Context, parent meta.Ino, name, target string) (meta.Entry, error) {
	e, err := fs.engine.Mknod(ctx, meta.MknodRequest{
		Parent: parent, Name: name, Type: meta.TypeSymlink, Mode: 0777, Target: target, Exclusive: true,
		Reserved: fs.reserve(ctx),
	})
	return e, committed(ctx, err)
}

// Readlink returns a symlink's target.
func (fs *FS) Readlink(ctx context.Context, ino meta.Ino) (string, error) {
	return fs.engine.Readlink(ctx, ino)
}

// Link adds the name parent/name for ino.
func (fs *FS) Link(ctx context.Context, ino, parent meta.Ino, name string) (meta.Entry, error) {
	fs.intend(ctx, 0)
	e, err := fs.engine.Link(ctx, ino, parent, name)
	if err := committed(ctx, err); err != nil {
		return meta.Entry{}, err
	}
	fs.overlay(e.Ino, &e.Attr)
	return e, nil
}

// Unlink removes a name; an inode left without names is purged now, or at
// its last close if this mount has it open.
func (fs *FS) Unlink(ctx context.Context, parent meta.Ino, name string) error {
	fs.intend(ctx, 0)
	r, err := fs.engine.Unlink(ctx, parent, name)
	if err := committed(ctx, err); err != nil {
		return err
	}
	return fs.removed(ctx, r)
}

// Rmdir removes an empty directory.
func (fs *FS) Rmdir(ctx context.Context, parent meta.Ino, name string) error {
	fs.intend(ctx, 0)
	return committed(ctx, fs.engine.Rmdir(ctx, parent, name))
}

// Rename moves or exchanges names, as rename(2) and renameat2(2).
func (fs *FS) Rename(ctx context.Context, req meta.RenameRequest) error {
	req.Moving = fs.moving(ctx)
	r, err := fs.engine.Rename(ctx, req)
	if err := committed(ctx, err); err != nil {
		return err
	}
	return fs.removed(ctx, r)
}

// removed handles an inode that lost a name.
func (fs *FS) removed(ctx context.Context, r meta.Removed) error {
	if !r.Orphan {
		return nil
	}
	fs.mu.Lock()
	f := fs.files[r.Ino]
	if f != nil {
		f.orphan = true
	}
	fs.mu.Unlock()
	if f != nil {
		return nil
	}
	return fs.engine.Purge(ctx, r.Ino)
}
