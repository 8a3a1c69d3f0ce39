package meta

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
)

// ResolvePath looks p (a path from the volume's root, "/" or "" for the
// root) up name by name.
func ResolvePath(ctx context.Context, eng Engine, p string) (Ino, error) {
	ino := RootIno
	for _, name := range strings.Split(strings.Trim(path.Clean("/"+p), "/"), "/") {
		if name == "" {
			continue
		}
		ent, err := eng.Lookup(ctx, ino, name)
		if err != nil {
			return 0, err
		}
		ino = ent.Ino
	}
	return ino, nil
}

// PathOf rebuilds the path of ino (best a directory: a file with several
// names gets the one under Attr.Parent) through the Parent fields,
// finding each name among its parent's entries. It reports false, with
// "(inode N)" as the path, when the chain breaks (a concurrent rename or
// delete, or an inode made before parents were recorded).
func PathOf(ctx context.Context, eng Engine, ino Ino) (string, bool) {
	var names []string
	for hops := 0; ino != RootIno; hops++ {
		a, err := eng.Getattr(ctx, ino)
		if err != nil || hops >= 4096 {
			return fmt.Sprintf("(inode %d)", ino), false
		}
		name, ok := nameIn(ctx, eng, a.Parent, ino)
		if !ok {
			return fmt.Sprintf("(inode %d)", ino), false
		}
		names = append(names, name)
		ino = a.Parent
	}
	slices.Reverse(names)
	return "/" + strings.Join(names, "/"), true
}

// nameIn finds child's name in directory dir.
func nameIn(ctx context.Context, eng Engine, dir, child Ino) (string, bool) {
	after := ""
	for {
		ents, err := eng.Readdir(ctx, dir, after, 1000, false)
		if err != nil || len(ents) == 0 {
			return "", false
		}
		for _, e := range ents {
			if e.Ino == child {
				return e.Name, true
			}
		}
		after = ents[len(ents)-1].Name
	}
}
