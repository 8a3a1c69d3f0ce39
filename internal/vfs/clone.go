package vfs

import (
	"context"
	"encoding/json"
	"syscall"

	"shoal/internal/meta"
)

// CloneXattr is the control name `shoal clone` sets on the destination
// directory to ask the mount for a clone (meta.Cloner). The value is a
// CloneControl in JSON; nothing is stored under the name. An xattr is the
// channel because the kernel passes it with the caller's identity and
// checks the caller's write access to the directory first, exactly what
// a create there needs; the engine then checks read access to the source.
const CloneXattr = "user.shoal.clone"

// CloneControl is the value of CloneXattr.
type CloneControl struct {
	Src      uint64 `json:"src"`  // the inode to copy (st_ino of the source)
	Name     string `json:"name"` // the new entry's name in the directory
	Preserve bool   `json:"preserve,omitempty"`
}

// Clone makes a writable copy of src as parent/name that shares src's data
// (meta.Cloner). Bytes this mount has acknowledged but not yet committed
// are committed first, so the clone holds every write(2) that returned
// before it, as cp --reflink would; other mounts' writes count from their
// close or fsync (close-to-open).
func (fs *FS) Clone(ctx context.Context, src, parent meta.Ino, name string, preserve bool) (meta.Entry, error) {
	cl, ok := fs.engine.(meta.Cloner)
	if !ok {
		return meta.Entry{}, syscall.EOPNOTSUPP
	}
	if f := fs.openFile(src); f != nil {
		if err := f.flush(ctx); err != nil {
			return meta.Entry{}, err
		}
	} else if err := fs.Sync(ctx); err != nil {
		return meta.Entry{}, err
	}
	return cl.Clone(ctx, meta.CloneRequest{Src: src, Parent: parent, Name: name, Preserve: preserve})
}

// cloneControl runs the clone a CloneXattr value asks for in directory
// parent.
func (fs *FS) cloneControl(ctx context.Context, parent meta.Ino, value []byte) error {
	var c CloneControl
	if err := json.Unmarshal(value, &c); err != nil || c.Src == 0 || c.Name == "" {
		return syscall.EINVAL
	}
	_, err := fs.Clone(ctx, meta.Ino(c.Src), parent, c.Name, c.Preserve)
	return err
}
