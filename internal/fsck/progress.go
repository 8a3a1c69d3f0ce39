package fsck

import "shoal/internal/progress"

// Progress tells a display what a running check is doing. Phases:
// "checking metadata", "freed list", "scanning slices", "listing objects",
// "checking blocks" (bytes when verifying, blocks otherwise), "finding
// files", "zeroing", "done".
type Progress = progress.Progress
