package gc

import (
	"context"
	"time"

	"shoal/internal/object"
)

// TempRemover is implemented by stores that keep temporary files of their
// own beside the objects (the file store: Puts in progress and a mount's
// spare files), which a killed writer leaves behind. gc asks the store
// under any wrappers (object.Unwrapper).
type TempRemover interface {
	RemoveStaleTemp(ctx context.Context, age time.Duration) (int, error)
}

// StaleTempAge is how old a store's temporary file must be before gc
// removes it, whatever a shorter grace says, unless the grace is a
// nanosecond or less (a volume known to have no client): far above the
// longest Put and the ten minutes after which a mount stops using a spare
// file.
const StaleTempAge = time.Hour

// removeTemp removes the store's stale temporary files, if it keeps any.
// A failure is listed with the failed deletes.
func (c *collector) removeTemp(ctx context.Context) {
	age := c.o.atLeast(StaleTempAge)
	r, ok := object.Find[TempRemover](c.store)
	if !ok {
		return
	}
	c.prog.Set("temporary files", 0, 0)
	n, err := r.RemoveStaleTemp(ctx, age)
	c.rep.TempRemoved += n
	if err != nil {
		c.rep.Failures = append(c.rep.Failures, err.Error())
	}
}
