package meta

import (
	"context"
	"time"
)

// The trash keeps deleted files for a while (Format.TrashDays > 0): the
// unlink of the last name of a regular file or symlink, by rm or by a
// rename over it, moves the inode into /.trash/YYYY-MM-DD-HH/ (the hour of
// the deletion, UTC) as an entry named "<parent ino>-<ino>-<name>", in the
// same transaction as the unlink. Engines that keep a trash implement
// Trash; docs/admin.md ("Trash") describes it for users.

// TrashName is the name of the trash directory under the root.
const TrashName = ".trash"

// TrashHourLayout is the time layout (UTC) of the trash's hour directories.
const TrashHourLayout = "2006-01-02-15"

// TrashEntry is one file in the trash.
type TrashEntry struct {
	Hour string `json:"hour"` // the hour directory, YYYY-MM-DD-HH
	Name string `json:"name"` // the entry's name in it
	Ino  Ino    `json:"ino"`
	// Parent and OrigName are where the file was deleted from, read
	// from Name (OrigName is cut short where Name had to be).
	Parent   Ino    `json:"parent"`
	OrigName string `json:"orig_name"`
	Type     Type   `json:"type"`
	Size     uint64 `json:"size"`
	Deleted  int64  `json:"deleted"` // ns since the epoch (the inode's ctime)
}

// Restored says where RestoreTrash put a file back.
type Restored struct {
	Parent Ino
	Name   string
	// Moved is set when the original place could not be used (the
	// parent is gone, or the name is taken) and Parent/Name is an
	// alternative; Reason says why.
	Moved  bool
	Reason string
}

// Trash lists, restores and empties a volume's trash, and changes how
// long it keeps files. All methods are safe to call concurrently and from
// several clients at once; EmptyTrash is idempotent.
type Trash interface {
	// SetTrashDays changes Format.TrashDays of the stored settings
	// (days >= 0; 0 turns the trash off). Other clients follow within
	// the engine's settings refresh interval.
	SetTrashDays(ctx context.Context, days int) error
	// ListTrash returns every entry in the trash, by hour then name.
	ListTrash(ctx context.Context) ([]TrashEntry, error)
	// RestoreTrash puts the entry hour/name back under its original
	// parent with its original name, or, when the parent is gone or the
	// name is taken, under an alternative (never overwriting anything):
	// ENOENT if there is no such entry.
	RestoreTrash(ctx context.Context, hour, name string) (Restored, error)
	// EmptyTrash deletes for good every entry of the hour directories
	// whose hour ended at or before before, and those directories,
	// freeing data as an unlink does (an entry open somewhere becomes an
	// orphan). It returns the number of entries deleted.
	EmptyTrash(ctx context.Context, before time.Time) (int, error)
	// ExpireTrash is EmptyTrash of what is older than the volume's
	// TrashDays at now, as this client last read the setting; it does
	// nothing while the trash is off. Mounts' cleaners call it.
	ExpireTrash(ctx context.Context, now time.Time) (int, error)
}

// TrashHour parses an hour directory's name: its start time, or false.
func TrashHour(name string) (time.Time, bool) {
	h, err := time.Parse(TrashHourLayout, name)
	return h, err == nil && h.Format(TrashHourLayout) == name
}
