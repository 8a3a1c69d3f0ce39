package fusefs

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Replies written before a handover.
//
// Quiesce returns once every request admitted through the gate has left
// its handler, but go-fuse writes the reply after the handler returns: a
// process that exited then would lose the replies of operations that
// happened, and the kernel would resend them to the successor. It
// answers those that must not run twice from the journal (resend.go),
// but an opendir would open a second directory handle, and a handover
// that waits for the replies leaves nothing to that cache (a journal that
// could not be written, say) for little cost. go-fuse does not say which
// replies it still has to write; the kernel does, in sum: fusectl's
// "waiting" file (/sys/fs/fuse/connections/DEV/waiting) counts the
// connection's requests that wait for a reply: all but FORGETs (which get
// none, and pass no gate), background ones such as RELEASE included.
// After Quiesce, the requests held at the gate (held) and the blocking lock
// requests not yet past it (lockWaits) never get a reply from this process,
// and those counts only grow; so once "waiting" is no more than their sum,
// read before it, no other reply is outstanding.
//
// Where fusectl is not mounted, AwaitReplies mounts it in a mount
// namespace of its own, on a thread it locks for good: the caller exits
// right after.

// AwaitReplies waits, after Quiesce, until the kernel has every reply
// owed to it but those of the requests held back, for the connection of
// the mount whose device minor number is minor. It fails if fusectl cannot
// be read or timeout passes first.
func (fs *FS) AwaitReplies(minor uint32, timeout time.Duration) error {
	waiting, err := fusectlWaiting(minor)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		owed := fs.gate.held.Load() + fs.gate.lockWaits.Load() // before waiting (above)
		n, err := waiting()
		if err != nil {
			return err
		}
		if n <= owed {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the kernel still waits for %d replies after %v (%d requests held back)", n-owed, timeout, owed)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

const fusectlDir = "/sys/fs/fuse/connections"

// fusectlWaiting returns a reader of the connection's "waiting" count,
// mounting fusectl privately if need be (see above).
func fusectlWaiting(minor uint32) (func() (int64, error), error) {
	path := fusectlDir + "/" + strconv.FormatUint(uint64(minor), 10) + "/waiting"
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if ents, _ := os.ReadDir(fusectlDir); len(ents) > 0 {
			return nil, fmt.Errorf("fusectl has no connection %d", minor)
		}
		runtime.LockOSThread() // never unlocked: the namespace is this thread's
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return nil, fmt.Errorf("fusectl: unshare: %w", err)
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return nil, fmt.Errorf("fusectl: %w", err)
		}
		if err := unix.Mount("fusectl", fusectlDir, "fusectl", 0, ""); err != nil {
			return nil, fmt.Errorf("fusectl: mount: %w", err)
		}
	}
	return func() (int64, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, fmt.Errorf("fusectl: %w", err)
		}
		return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}, nil
}
