package vfs

import (
	"context"
	"errors"
	"syscall"

	"shoal/internal/meta"
)

// Intents: telling, after a crash, whether a request committed.
//
// An operation that answers a kernel request (WithRequest) and changes
// names or xattrs — a create, mknod, mkdir, symlink, link, unlink, rmdir,
// rename, setxattr or removexattr — records its intent in the journal
// before the engine commits it: for a create, with the number the new
// inode gets (meta.MknodRequest.Reserved: not handed out again while an
// intent naming it could match); for a
// rename or an exchange, with the inode the old name holds, which the
// engine tells inside its transaction (meta.RenameRequest.Moving). The adaptor records
// the outcome after (package journal, replies.go). A successor that finds
// the intent and no outcome asks the volume instead of running the
// request blind a second time (package fusefs, committed.go).

// Stage is a point in an operation that a test may crash the process at
// (WithStageHook).
type Stage int

const (
	// StageIntent: the intent is recorded, nothing is committed.
	StageIntent Stage = iota + 1
	// StageCommitted: the engine committed the operation, and nothing
	// after the intent is recorded yet (for a create, not its handle).
	StageCommitted
)

// stageKey is the context key of WithStageHook.
type stageKey struct{}

// WithStageHook returns ctx for an operation that calls fn at each Stage
// it reaches. For tests, which crash the server there: not a user
// setting.
func WithStageHook(ctx context.Context, fn func(Stage)) context.Context {
	return context.WithValue(ctx, stageKey{}, fn)
}

// reached calls the stage hook of ctx, if any.
func reached(ctx context.Context, s Stage) {
	if fn, ok := ctx.Value(stageKey{}).(func(Stage)); ok {
		fn(s)
	}
}

// committed reports that the engine committed the operation of ctx (err
// nil) and returns err.
func committed(ctx context.Context, err error) error {
	if err == nil {
		reached(ctx, StageCommitted)
	}
	return err
}

// intend records the intent of the request ctx answers, naming ino (0:
// none), when there is a journal and a request.
func (fs *FS) intend(ctx context.Context, ino meta.Ino) {
	req := requestOf(ctx)
	if fs.journal == nil || req == 0 {
		return
	}
	fs.noteJournal(fs.journal.Intent(req, uint64(ino)))
	reached(ctx, StageIntent)
}

// reserve returns the MknodRequest.Reserved of a create answering the
// request of ctx: it records the intent with the new inode's number (nil
// without a journal or a request).
func (fs *FS) reserve(ctx context.Context) func(meta.Ino) {
	if fs.journal == nil || requestOf(ctx) == 0 {
		return nil
	}
	return func(ino meta.Ino) { fs.intend(ctx, ino) }
}

// moving returns the RenameRequest.Moving of a rename answering the
// request of ctx: it records the intent with the inode the old name
// holds, which a committed rename (or exchange) leaves at the new name
// (nil without a journal or a request).
func (fs *FS) moving(ctx context.Context) func(meta.Ino) {
	if fs.journal == nil || requestOf(ctx) == 0 {
		return nil
	}
	return func(ino meta.Ino) { fs.intend(ctx, ino) }
}

// intendXattr records the intent of a setxattr or removexattr of name,
// after checking what only the engine checks: that an XATTR_CREATE's
// xattr is unset (else EEXIST), that a removal's is set (else ENODATA).
// A successor that finds the intent and then the xattr set (or gone)
// can then tell that the request committed, where one bound to fail
// looks the same.
func (fs *FS) intendXattr(ctx context.Context, ino meta.Ino, name string, create, remove bool) error {
	if fs.journal == nil || requestOf(ctx) == 0 {
		return nil
	}
	if create || remove {
		_, err := fs.engine.Getxattr(ctx, ino, name)
		switch {
		case create && err == nil:
			return syscall.EEXIST
		case remove && errors.Is(err, syscall.ENODATA):
			return err
		case err != nil && !errors.Is(err, syscall.ENODATA):
			return err
		}
	}
	fs.intend(ctx, 0)
	return nil
}
