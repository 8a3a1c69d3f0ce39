package vfs

// SetJournaledHook makes f run in Write between a write's journal record
// and its buffering (nil: nothing runs).
func SetJournaledHook(f func()) { testHookJournaled = f }
