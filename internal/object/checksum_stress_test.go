package object_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"shoal/internal/object"
	"shoal/internal/object/filestore"
)

// TestChecksumStackConcurrent runs the volume's stack (checksums over
// retries over a file store) with concurrent Puts and ranged Gets while
// Puts die mid-body and Get bodies break. Readers often close a body
// before reading it all, returning its record buffer to the pool while
// other readers take buffers. Whatever fails, a Get never yields wrong
// bytes and never reports corruption: nothing here corrupts a stored byte.
func TestChecksumStackConcurrent(t *testing.T) {
	fs, err := filestore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	faults := object.WithFaults(fs)
	s := object.WithChecksum(object.WithRetry(faults, 4, time.Millisecond))
	var (
		mu     sync.Mutex
		stored = map[string][]byte{}
		keys   []string
	)
	publish := func(key string, data []byte) {
		mu.Lock()
		stored[key] = data
		keys = append(keys, key)
		mu.Unlock()
	}
	pick := func(rng *rand.Rand) (string, []byte) {
		mu.Lock()
		defer mu.Unlock()
		if len(keys) == 0 {
			return "", nil
		}
		k := keys[rng.IntN(len(keys))]
		return k, stored[k]
	}
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() { stressPuts(t, s, faults, uint64(w), publish) })
	}
	errs := make(chan error, 3)
	for r := range 3 {
		wg.Go(func() { errs <- stressGets(s, faults, uint64(10+r), pick) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// stressPuts stores objects of random sizes, arming mid-body deaths now
// and then; a Put that fails for good is simply not published.
func stressPuts(t *testing.T, s object.Store, f *object.FaultStore, seed uint64, publish func(string, []byte)) {
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range 40 {
		if rng.IntN(4) == 0 {
			f.DiePuts(1, int64(rng.IntN(200_000)))
		}
		data := randData(seed*1000+uint64(i), rng.IntN(300_000))
		key := fmt.Sprintf("chunks/%d/%d_0_%d", seed, i, len(data))
		err := s.Put(context.Background(), key, bytes.NewReader(data), int64(len(data)))
		if err == nil {
			publish(key, data)
		} else if !errors.Is(err, object.ErrInjected) {
			t.Errorf("Put %s: %v", key, err)
		}
	}
}

// stressGets reads random ranges of published objects, sometimes closing
// the body early, and returns the first wrong result.
func stressGets(s object.Store, f *object.FaultStore, seed uint64, pick func(*rand.Rand) (string, []byte)) error {
	rng := rand.New(rand.NewPCG(seed, 2))
	for range 400 {
		key, data := pick(rng)
		if key == "" {
			time.Sleep(time.Millisecond)
			continue
		}
		if rng.IntN(8) == 0 {
			f.BreakReads(1, int64(rng.IntN(40_000)))
		}
		off := rng.Int64N(int64(len(data)) + 1)
		limit := []int64{-1, 1, 4096, 20_000, 70_000}[rng.IntN(5)]
		upto := -1 // bytes to read before closing; -1: all
		if rng.IntN(3) == 0 {
			upto = rng.IntN(40_000)
		}
		got, err := readSome(s, key, off, limit, upto)
		if errors.Is(err, object.ErrCorrupt) {
			return fmt.Errorf("Get(%s, %d, %d): %w", key, off, limit, err)
		}
		if err != nil {
			continue // an injected failure outlasted the retries
		}
		w := want(data, off, limit)
		if upto >= 0 {
			w = w[:min(len(w), upto)]
		}
		if !bytes.Equal(got, w) {
			return fmt.Errorf("Get(%s, %d, %d): wrong bytes (%d, want %d)", key, off, limit, len(got), len(w))
		}
	}
	return nil
}

// readSome reads up to upto bytes (all when upto < 0) of a Get, then
// closes the body.
func readSome(s object.Store, key string, off, limit int64, upto int) ([]byte, error) {
	rc, err := s.Get(context.Background(), key, off, limit)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var r io.Reader = rc
	if upto >= 0 {
		r = io.LimitReader(rc, int64(upto))
	}
	return io.ReadAll(r)
}
