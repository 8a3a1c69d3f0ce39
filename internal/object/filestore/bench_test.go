package filestore

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"shoal/internal/object"
)

// BenchmarkSmallFreshPut compares the ways a small fresh Put (a 4 KiB
// block with its checksum framing, 4128 bytes) can go, interleaved Put by
// Put so that a shared machine's load falls on all alike: created in
// place, over a spare, and into a name prepared ahead in batches of 32 as
// the data layer does (the batches made in the background meanwhile). It
// reports each way's median and 99th percentile (TMPDIR picks the disk):
//
//	go test -run - -bench SmallFreshPut -benchtime 2000x ./internal/object/filestore
func BenchmarkSmallFreshPut(b *testing.B) {
	modes := []string{"inplace", "spare", "named"}
	body := bytes.Repeat([]byte("x"), 4128)
	ctx := object.WithFreshKey(context.Background())
	key := func(i int) string { return fmt.Sprintf("chunks/0/%d/%d_0_4096", (i+1)/1000, i+1) }
	stores := make([]*Store, len(modes))
	for m, mode := range modes {
		s, err := New(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		if mode == "spare" {
			defer s.KeepSpares()()
		}
		stores[m] = s
	}
	named := stores[2]
	prepare := func(from int) {
		keys := make([]string, 0, 32)
		for j := from; j < from+32; j++ {
			keys = append(keys, key(j))
		}
		named.Prepare(context.Background(), keys, int64(len(body)))
	}
	prepare(0)
	prepared := 32
	var refill chan struct{}
	lat := make([][]time.Duration, len(modes))
	b.ResetTimer()
	for i := range b.N {
		if refill != nil {
			select {
			case <-refill:
				refill = nil
			default:
			}
		}
		if refill == nil && prepared-i < 8 {
			from := max(prepared, i+1)
			refill = make(chan struct{})
			go func(done chan struct{}) {
				prepare(from)
				close(done)
			}(refill)
			prepared = from + 32
		}
		for m, s := range stores {
			t := time.Now()
			if err := s.Put(ctx, key(i), bytes.NewReader(body), int64(len(body))); err != nil {
				b.Fatal(err)
			}
			lat[m] = append(lat[m], time.Since(t))
		}
	}
	b.StopTimer()
	if refill != nil {
		<-refill
	}
	for m, mode := range modes {
		l := lat[m]
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
		b.ReportMetric(float64(l[len(l)/2].Microseconds()), mode+"-p50-µs")
		b.ReportMetric(float64(l[len(l)*99/100].Microseconds()), mode+"-p99-µs")
	}
}
