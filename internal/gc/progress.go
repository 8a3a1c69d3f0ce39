package gc

import "shoal/internal/progress"

// Progress tells a display what a running collection is doing. Phases:
// "clock", "freed list", "scanning metadata", "listing objects", "checking
// missing", "confirming", "deleting", "deleting freed", "done".
type Progress = progress.Progress
