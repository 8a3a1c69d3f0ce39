package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"time"
)

// fsyncLatency measures the cost of making a small change durable, as an
// editor saving a file or a database committing does: n times, append
// 4 KiB to FILE and fsync it, and print the median and the 99th
// percentile of those append+fsync pairs (milliseconds). The file is
// created fresh and removed at the end.
func fsyncLatency(path string, n int) error {
	if n < 1 {
		return fmt.Errorf("fsync: need a count of at least 1")
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer os.Remove(path)
	defer f.Close()
	buf := bytes.Repeat([]byte{'x'}, 4096)
	lat := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if _, err := f.Write(buf); err != nil {
			return fmt.Errorf("append: %w", err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("fsync: %w", err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
	emit("fsync_p50_ms", ms(lat[len(lat)/2]))
	emit("fsync_p99_ms", ms(lat[(len(lat)*99)/100]))
	return f.Close()
}
