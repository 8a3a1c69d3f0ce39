package main

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"time"
)

// stall writes 4 KiB into FILE and stats it every millisecond for the
// given seconds, as an application working through a server restart
// would, and prints the longest any of these calls took and the 99th
// percentile (milliseconds). Any error fails it: an application must not
// see one.
func stall(path string, seconds int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := bytes.Repeat([]byte{1}, 4096)
	var lat []time.Duration
	end := time.Now().Add(time.Duration(seconds) * time.Second)
	for i := 0; time.Now().Before(end); i++ {
		start := time.Now()
		if _, err := f.WriteAt(buf, int64(i%1024)*4096); err != nil {
			return fmt.Errorf("write after %v: %w", time.Since(end.Add(-time.Duration(seconds)*time.Second)), err)
		}
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("stat: %w", err)
		}
		lat = append(lat, time.Since(start))
		time.Sleep(time.Millisecond)
	}
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Printf("stall_max_ms %.1f\nstall_p99_ms %.2f\n", ms(lat[len(lat)-1]), ms(lat[len(lat)*99/100]))
	return nil
}
