package bench

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// dropCachesPath is the kernel knob that drops clean page-cache pages,
// dentries and inodes.
const dropCachesPath = "/proc/sys/vm/drop_caches"

// cacheDropper drops the page cache before cold phases, once it has
// failed it stops trying and remembers why.
type cacheDropper struct {
	enabled bool
	path    string

	mu      sync.Mutex
	tried   bool
	dropped bool
	failure error
}

func newCacheDropper(enabled bool) *cacheDropper {
	return &cacheDropper{enabled: enabled, path: dropCachesPath}
}

// drop syncs and drops the page cache; it reports whether it did.
func (d *cacheDropper) drop() bool {
	if !d.enabled {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failure != nil {
		return false
	}
	d.tried = true
	unix.Sync()
	if err := os.WriteFile(d.path, []byte("3\n"), 0); err != nil {
		d.failure = err
		return false
	}
	d.dropped = true
	return true
}

// status is the report's settings.cache_drop value.
func (d *cacheDropper) status() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case !d.enabled:
		return "disabled"
	case d.failure != nil:
		return "not permitted"
	case d.dropped:
		return "dropped"
	}
	return "not needed"
}

// note is the report note about a failure to drop, or "".
func (d *cacheDropper) note() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failure == nil {
		return ""
	}
	return fmt.Sprintf("the page cache could not be dropped before cold phases (%v; run as root to allow it), so figures marked cold were measured warm", d.failure)
}
