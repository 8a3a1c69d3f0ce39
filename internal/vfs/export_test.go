package vfs

import "time"

// SetJournaledHook makes f run in Write between a write's journal record
// and its buffering (nil: nothing runs).
func SetJournaledHook(f func()) { testHookJournaled = f }

// SetCleanBudget sets how long a cleaner's tick goes on reading full
// pages of the freed list beyond cleanPages, and returns the old value.
func SetCleanBudget(d time.Duration) time.Duration {
	old := cleanBudget
	cleanBudget = d
	return old
}
