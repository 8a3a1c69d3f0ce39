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
	lat, err := fsyncInterleaved([]string{path}, n)
	if err != nil {
		return err
	}
	emit("fsync_p50_ms", ms(pct(lat[0], 50)))
	emit("fsync_p99_ms", ms(pct(lat[0], 99)))
	return nil
}

// fsyncCompare is fsyncLatency over several files at once (on different
// mounts, say an old and a new build, and the local disk), interleaved:
// each round appends and fsyncs every file once, in turn, so that a
// noisy machine's slow moments fall on all of them alike. It prints each
// file's p50 and p99 and its p50 as a ratio to the first file's.
func fsyncCompare(n int, paths []string) error {
	lat, err := fsyncInterleaved(paths, n)
	if err != nil {
		return err
	}
	base := ms(pct(lat[0], 50))
	for i, p := range paths {
		p50 := ms(pct(lat[i], 50))
		fmt.Printf("%s fsync_p50_ms %.3f fsync_p99_ms %.3f ratio %.2f\n", p, p50, ms(pct(lat[i], 99)), p50/base)
	}
	return nil
}

// fsyncInterleaved runs n rounds of one 4 KiB append + fsync per file and
// returns each file's latencies, sorted.
func fsyncInterleaved(paths []string, n int) ([][]time.Duration, error) {
	if n < 1 || len(paths) == 0 {
		return nil, fmt.Errorf("fsync: need a count of at least 1 and a file")
	}
	files := make([]*os.File, len(paths))
	for i, p := range paths {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		defer os.Remove(p)
		defer f.Close()
		files[i] = f
	}
	buf := bytes.Repeat([]byte{'x'}, 4096)
	lat := make([][]time.Duration, len(files))
	for range n {
		for i, f := range files {
			start := time.Now()
			if _, err := f.Write(buf); err != nil {
				return nil, fmt.Errorf("append %s: %w", paths[i], err)
			}
			if err := f.Sync(); err != nil {
				return nil, fmt.Errorf("fsync %s: %w", paths[i], err)
			}
			lat[i] = append(lat[i], time.Since(start))
		}
	}
	for i, f := range files {
		slices.Sort(lat[i])
		if err := f.Close(); err != nil {
			return nil, err
		}
	}
	return lat, nil
}

// pct returns the p-th percentile of sorted latencies.
func pct(sorted []time.Duration, p int) time.Duration { return sorted[len(sorted)*p/100] }

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
