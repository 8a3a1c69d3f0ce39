package filestore

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// RemoveStaleTemp deletes temporary files older than age that crashed or
// killed Puts left behind, and returns how many it removed. It walks the
// whole tree, so it belongs in gc or fsck, not in the I/O path. age must
// exceed the longest Put, or it may remove a file a live Put is writing
// (that Put then fails; no object is damaged).
func (s *Store) RemoveStaleTemp(ctx context.Context, age time.Duration) (int, error) {
	cutoff := time.Now().Add(-age)
	removed := 0
	err := filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if isAbsent(err) {
				return nil // pruned by a concurrent Delete
			}
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if d.IsDir() || !strings.HasPrefix(d.Name(), tmpPrefix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil || fi.ModTime().After(cutoff) {
			return nil
		}
		if err := os.Remove(p); err == nil {
			removed++
		} else if !isAbsent(err) {
			return err
		}
		return nil
	})
	if err != nil {
		return removed, fmt.Errorf("filestore: remove stale temporary files: %w", err)
	}
	return removed, nil
}
