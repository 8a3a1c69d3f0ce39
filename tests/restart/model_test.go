package restart

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The model: a tree of inodes, as Linux and a POSIX file system answer
// each operation, the kernel's own checks (path resolution, the existence
// of names, the type checks and the ancestor traps of rename, user xattrs
// only on files and directories) before the file system's.

// node is an inode: a hard link is one node under two names.
type node struct {
	kind   byte // 'f' file, 'd' directory, 'l' symlink, 'p' FIFO
	data   string
	target string
	xattrs map[string]string
	kids   map[string]*node
}

type model struct{ root *node }

func newModel() *model { return &model{root: newNode('d')} }

func newNode(kind byte) *node {
	n := &node{kind: kind, xattrs: map[string]string{}}
	if kind == 'd' {
		n.kids = map[string]*node{}
	}
	return n
}

// parent resolves the directory holding path's last name: ENOENT for a
// missing component or a (dangling) symlink, ENOTDIR for another file.
func (mod *model) parent(path string) (*node, string, syscall.Errno) {
	dir, name := filepath.Split(path)
	p := mod.root
	for _, c := range strings.Split(strings.Trim(dir, "/"), "/") {
		if c == "" {
			continue
		}
		n := p.kids[c]
		switch {
		case n == nil || n.kind == 'l':
			return nil, "", syscall.ENOENT
		case n.kind != 'd':
			return nil, "", syscall.ENOTDIR
		}
		p = n
	}
	return p, name, 0
}

// apply predicts o's outcome, applies it to the model, and tells whether
// its request reaches the file system.
func (mod *model) apply(o *modelOp) syscall.Errno {
	errno := mod.do(o)
	switch {
	case errno == 0:
		o.served = !o.noop
	case errno == syscall.ENOTEMPTY && o.kind == "rename":
		o.served = !isAncestor(o.to, o.path) // not the kernel's trap
	default:
		fsErrno := map[string]syscall.Errno{"rmdir": syscall.ENOTEMPTY, "setxattr": syscall.EEXIST, "removexattr": syscall.ENODATA}
		o.served = fsErrno[o.kind] == errno
	}
	return errno
}

func (mod *model) do(o *modelOp) syscall.Errno {
	dir, name, errno := mod.parent(o.path)
	if errno != 0 {
		return errno
	}
	n := dir.kids[name]
	switch o.kind {
	case "create", "mknod", "mkdir", "symlink":
		return mod.make(dir, name, n, *o)
	case "link":
		return mod.link(n, *o)
	case "unlink":
		return remove(dir, name, n, false)
	case "rmdir":
		return remove(dir, name, n, true)
	case "rename":
		return mod.rename(dir, name, o)
	case "setxattr", "removexattr":
		return xattr(n, *o)
	case "append":
		return appendTo(n, o.data)
	}
	panic("unknown op " + o.kind)
}

func (mod *model) make(dir *node, name string, n *node, o modelOp) syscall.Errno {
	if n != nil {
		return syscall.EEXIST
	}
	kind := map[string]byte{"create": 'f', "mknod": 'p', "mkdir": 'd', "symlink": 'l'}[o.kind]
	n = newNode(kind)
	switch kind {
	case 'f':
		n.data = o.data
	case 'l':
		n.target = o.data
	}
	dir.kids[name] = n
	return 0
}

// link: the old path first (not followed: a symlink is linked), then the
// new one's directory and name, then EPERM for a directory.
func (mod *model) link(old *node, o modelOp) syscall.Errno {
	if old == nil {
		return syscall.ENOENT
	}
	dir, name, errno := mod.parent(o.to)
	switch {
	case errno != 0:
		return errno
	case dir.kids[name] != nil:
		return syscall.EEXIST
	case old.kind == 'd':
		return syscall.EPERM
	}
	dir.kids[name] = old
	return 0
}

func remove(dir *node, name string, n *node, rmdir bool) syscall.Errno {
	switch {
	case n == nil:
		return syscall.ENOENT
	case rmdir && n.kind != 'd':
		return syscall.ENOTDIR
	case !rmdir && n.kind == 'd':
		return syscall.EISDIR
	case rmdir && len(n.kids) > 0:
		return syscall.ENOTEMPTY
	}
	delete(dir.kids, name)
	return 0
}

// rename follows do_renameat2 and vfs_rename: both directories, the
// source, RENAME_NOREPLACE's and RENAME_EXCHANGE's target, the ancestor
// traps, two names of one inode (success, nothing done), the types, then
// the file system's ENOTEMPTY.
func (mod *model) rename(odir *node, oname string, o *modelOp) syscall.Errno {
	ndir, nname, errno := mod.parent(o.to)
	if errno != 0 {
		return errno
	}
	src, dst := odir.kids[oname], ndir.kids[nname]
	exchange := o.flags&unix.RENAME_EXCHANGE != 0
	switch {
	case src == nil:
		return syscall.ENOENT
	case o.flags&unix.RENAME_NOREPLACE != 0 && dst != nil:
		return syscall.EEXIST
	case exchange && dst == nil:
		return syscall.ENOENT
	case isAncestor(o.path, o.to):
		return syscall.EINVAL
	case isAncestor(o.to, o.path) && exchange:
		return syscall.EINVAL
	case isAncestor(o.to, o.path):
		return syscall.ENOTEMPTY
	case src == dst:
		o.noop = true
		return 0
	case exchange:
		odir.kids[oname], ndir.kids[nname] = dst, src
		return 0
	case dst != nil && src.kind == 'd' && dst.kind != 'd':
		return syscall.ENOTDIR
	case dst != nil && src.kind != 'd' && dst.kind == 'd':
		return syscall.EISDIR
	case dst != nil && dst.kind == 'd' && len(dst.kids) > 0:
		return syscall.ENOTEMPTY
	}
	delete(odir.kids, oname)
	ndir.kids[nname] = src
	return 0
}

// isAncestor reports whether path a is a proper ancestor of path b.
func isAncestor(a, b string) bool { return strings.HasPrefix(b, a+"/") }

// xattr: the path is followed (a dangling symlink is ENOENT); user xattrs
// live on files and directories only (EPERM on a FIFO).
func xattr(n *node, o modelOp) syscall.Errno {
	switch {
	case n == nil || n.kind == 'l':
		return syscall.ENOENT
	case n.kind == 'p':
		return syscall.EPERM
	}
	_, set := n.xattrs[o.key]
	switch {
	case o.kind == "removexattr" && !set:
		return syscall.ENODATA
	case o.kind == "removexattr":
		delete(n.xattrs, o.key)
	case o.flags&unix.XATTR_CREATE != 0 && set:
		return syscall.EEXIST
	default:
		n.xattrs[o.key] = o.data
	}
	return 0
}

// appendTo: an open(O_WRONLY|O_APPEND|O_NONBLOCK) and a write.
func appendTo(n *node, data string) syscall.Errno {
	switch {
	case n == nil || n.kind == 'l':
		return syscall.ENOENT
	case n.kind == 'd':
		return syscall.EISDIR
	case n.kind == 'p':
		return syscall.ENXIO
	}
	n.data += data
	return 0
}

// dump lists the model's tree as dumpTree lists a directory.
func (mod *model) dump() string {
	var lines []string
	ids := map[*node]string{}
	var walk func(dir *node, prefix string)
	walk = func(dir *node, prefix string) {
		names := make([]string, 0, len(dir.kids))
		for name := range dir.kids {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			n, p := dir.kids[name], prefix+name
			if _, ok := ids[n]; !ok {
				ids[n] = p
			}
			lines = append(lines, entryLine(p, n.kind, links(mod.root, n), n.data, n.target, n.xattrs, ids[n]))
			if n.kind == 'd' {
				walk(n, p+"/")
			}
		}
	}
	walk(mod.root, "")
	return strings.Join(lines, "\n")
}

// links counts n's names under dir (a directory: 2 and its subdirectories).
func links(dir, n *node) int {
	if n.kind == 'd' {
		count := 2
		for _, k := range n.kids {
			if k.kind == 'd' {
				count++
			}
		}
		return count
	}
	count := 0
	for _, k := range dir.kids {
		if k == n {
			count++
		}
		if k.kind == 'd' {
			count += links(k, n)
		}
	}
	return count
}

// entryLine is one name of a tree dump: its path, type, link count,
// content or target, xattrs, and the first path of its inode (hard links
// name the same one).
func entryLine(path string, kind byte, nlink int, data, target string, xattrs map[string]string, first string) string {
	keys := make([]string, 0, len(xattrs))
	for k := range xattrs {
		keys = append(keys, k+"="+xattrs[k])
	}
	sort.Strings(keys)
	return fmt.Sprintf("%s %c nlink=%d data=%q target=%q xattrs=%v inode-of=%s", path, kind, nlink, data, target, keys, first)
}

// dumpTree lists the tree under root as model.dump does, reading it
// through the file system.
func dumpTree(root string) (string, error) {
	var lines []string
	first := map[uint64]string{}
	var walk func(dir, prefix string) error
	walk = func(dir, prefix string) error {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries { // sorted by name
			line, isDir, err := readEntry(filepath.Join(dir, e.Name()), prefix+e.Name(), first)
			if err != nil {
				return err
			}
			lines = append(lines, line)
			if isDir {
				if err := walk(filepath.Join(dir, e.Name()), prefix+e.Name()+"/"); err != nil {
					return err
				}
			}
		}
		return nil
	}
	err := walk(root, "")
	return strings.Join(lines, "\n"), err
}

func readEntry(path, name string, first map[uint64]string) (string, bool, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return "", false, err
	}
	if _, ok := first[st.Ino]; !ok {
		first[st.Ino] = name
	}
	var kind byte
	var data, target string
	var err error
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		kind = 'f'
		var b []byte
		b, err = os.ReadFile(path)
		data = string(b)
	case unix.S_IFDIR:
		kind = 'd'
	case unix.S_IFLNK:
		kind = 'l'
		target, err = os.Readlink(path)
	case unix.S_IFIFO:
		kind = 'p'
	default:
		kind = '?'
	}
	if err != nil {
		return "", false, err
	}
	xattrs, err := userXattrs(path)
	if err != nil {
		return "", false, err
	}
	return entryLine(name, kind, int(st.Nlink), data, target, xattrs, first[st.Ino]), kind == 'd', nil
}

// userXattrs reads the user.* xattrs of path (not following a symlink).
func userXattrs(path string) (map[string]string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(path, buf)
	if err != nil {
		return nil, err
	}
	xattrs := map[string]string{}
	for _, k := range strings.Split(string(buf[:n]), "\x00") {
		if !strings.HasPrefix(k, "user.") {
			continue
		}
		v := make([]byte, 4096)
		vn, err := unix.Lgetxattr(path, k, v)
		if err != nil {
			return nil, err
		}
		xattrs[k] = string(v[:vn])
	}
	return xattrs, nil
}
