package workload

import (
	"errors"
	"fmt"
)

// Validate checks a workload's parameters: counts and sizes positive where
// they must be, record and block sizes at most maxRecord, biases 0..10.
func Validate(w Workload, maxRecord int) error {
	var errs []error
	need := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	rec := func(name string, n int) { need(n > 0 && n <= maxRecord, "%s %d: want 1..%d bytes", name, n, maxRecord) }
	switch w := w.(type) {
	case *Iozone:
		if !w.Auto {
			need(w.Workers > 0, "workers %d: want at least 1", w.Workers)
			need(w.FileSize > 0, "file size must be positive")
			rec("record size", w.Record)
		} else {
			rec("smallest auto record", w.AutoMinRec)
			rec("largest auto record", w.AutoMaxRec)
			need(w.AutoMinFile > 0 && w.AutoMinFile <= w.AutoMaxFile, "auto file sizes: want 0 < min <= max")
		}
	case *Bonnie:
		need(w.FileSize > 0, "file size must be positive")
		rec("chunk size", w.Chunk)
		need(w.Files > 0, "files %d: want at least 1", w.Files)
		need(w.Dirs >= 0, "dirs %d: want 0 or more", w.Dirs)
	case *PostMark:
		need(w.Files > 0 && w.Transactions >= 0, "files and transactions: want files > 0, transactions >= 0")
		rec("read block", w.ReadBlock)
		rec("write block", w.WriteBlock)
		need(w.ReadBias >= 0 && w.ReadBias <= 10 && w.CreateBias >= 0 && w.CreateBias <= 10, "biases: want 0..10")
		need(w.Subdirs >= 0, "subdirs %d: want 0 or more", w.Subdirs)
	case *Mass:
		need(w.Files > 0, "files %d: want at least 1", w.Files)
	case *HugeDir:
		need(w.Entries > 0, "entries %d: want at least 1", w.Entries)
	}
	return errors.Join(errs...)
}
