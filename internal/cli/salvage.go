package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"shoal/internal/journal"
)

// A fresh mount may find the journal of an earlier mount at its
// mountpoint: that mount's supervisor died with its server (systemd's
// Restart=, the OOM killer) and its acknowledged writes were never
// committed. The fresh mount takes them over:
//
//  1. takeOldJournal reads that journal and moves it to DIR.old (a journal
//     without writes is removed), freeing DIR for the mount's own;
//  2. once the mount's journal exists, salvage puts the writes back into
//     the files' write buffers, recording each in the new journal as a
//     write through the mount would be, and removes DIR.old; the writes
//     are then committed in the background like any buffered write, so
//     a slow or full store does not keep the mount from coming up, and a
//     server that dies before they are committed leaves them to its
//     successor through the new journal.
//
// A crash between the two leaves DIR.old (and perhaps a new DIR holding
// some of the same writes, made before the mount served anything): the
// next mount takes DIR.old again and drops that DIR. A journal of
// another volume with writes in it is left alone and the mount refused:
// removing it would lose that volume's acknowledged writes.

// oldJournalDir is where a fresh mount keeps an earlier mount's journal
// until its writes are in the new one.
func oldJournalDir(dir string) string { return dir + ".old" }

// takeOldJournal returns the state of an earlier mount's journal at dir
// (empty if none) and moves it out of dir's way.
func takeOldJournal(sv *serving, dir string) (journal.State, error) {
	prev := oldJournalDir(dir)
	if exists(prev) {
		st, err := recoverJournal(sv, prev)
		if err != nil {
			return st, err
		}
		return st, os.RemoveAll(dir)
	}
	if !exists(dir) {
		return journal.State{}, nil
	}
	st, err := recoverJournal(sv, dir)
	if err != nil {
		return st, err
	}
	if len(st.Writes) == 0 {
		return journal.State{}, os.RemoveAll(dir)
	}
	return st, os.Rename(dir, prev)
}

// recoverJournal reads the journal at dir, which must be this volume's
// if it holds writes.
func recoverJournal(sv *serving, dir string) (journal.State, error) {
	st, err := journal.Recover(dir)
	if err != nil {
		return st, fmt.Errorf("the journal of an earlier mount at this mountpoint (%s) cannot be read: %w; remove it to mount without its writes", dir, err)
	}
	if len(st.Writes) > 0 {
		if uuid := journal.LoadVolume(dir); uuid != sv.vol.Format.UUID {
			return st, fmt.Errorf("%s holds %d acknowledged writes of an earlier mount of another volume (uuid %q) at this mountpoint: mount that volume here once to apply them, or remove %s to discard them", dir, len(st.Writes), uuid, dir)
		}
	}
	return st, nil
}

// salvage takes over old's writes (step 2 above).
func salvage(ctx context.Context, sv *serving, old journal.State, dir string) error {
	n := len(old.Writes)
	if n == 0 {
		return nil
	}
	done := func(err error) {
		if err != nil {
			sv.log.Error("the acknowledged writes of an earlier mount at this mountpoint are not committed yet; they stay buffered and are retried like any buffered write (close, fsync and unmount wait for them)", "writes", n, "err", err)
			return
		}
		sv.log.Info("committed the acknowledged writes of an earlier mount at this mountpoint", "writes", n)
	}
	if err := sv.vol.FS.Salvage(ctx, old, done); err != nil {
		return fmt.Errorf("applying the journal of an earlier mount at this mountpoint (%s): %w", oldJournalDir(dir), err)
	}
	sv.log.Warn("took over the acknowledged writes of an earlier mount at this mountpoint whose supervisor died (they commit in the background); its open files and locks stay with its session until that is reclaimed",
		"writes", n, "handles", len(old.Handles), "session", old.Session)
	return os.RemoveAll(oldJournalDir(dir))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}
