package multihost

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"shoal/internal/testutil"
)

// mountN mounts v n times at v.Dir/mnt0..mnt{n-1}, each a separate
// `shoal mount` process, with the same extra flags.
func mountN(t *testing.T, v *testutil.Volume, n int, extra ...string) []*testutil.Mount {
	t.Helper()
	testutil.RequireFUSE(t)
	ms := make([]*testutil.Mount, n)
	for i := range ms {
		dir := filepath.Join(v.Dir, fmt.Sprintf("mnt%d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		ms[i] = v.MountAt(t, dir, extra...)
	}
	return ms
}

// fastSessions are mount flags that make a dead mount's session expire in
// a few seconds instead of a minute.
var fastSessions = []string{"--heartbeat", "300ms", "--session-timeout", "3s"}

// randBytes returns n bytes of a pattern determined by seed.
func randBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n+8)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b[:n]
}

// writeFile writes data to path (created or truncated) and closes it,
// failing t on any error; with sync it fsyncs before closing.
func writeFile(t *testing.T, path string, data []byte, sync bool) {
	t.Helper()
	if err := writeFileErr(path, data, sync); err != nil {
		t.Fatal(err)
	}
}

// writeFileErr is writeFile returning the error.
func writeFileErr(path string, data []byte, sync bool) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return fmt.Errorf("fsync %s: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}

// wantContent fails t unless path holds exactly want.
func wantContent(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %s", path, diffSummary(got, want))
	}
}

// diffSummary describes how got differs from want.
func diffSummary(got, want []byte) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d bytes, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Sprintf("first difference at byte %d of %d", i, len(want))
		}
	}
	return "equal"
}

// eventually polls cond every 20 ms until it returns nil or limit passes,
// and returns how long it took and the last error.
func eventually(limit time.Duration, cond func() error) (time.Duration, error) {
	start := time.Now()
	for {
		err := cond()
		if err == nil || time.Since(start) > limit {
			return time.Since(start), err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// exists reports nil when path exists and an error otherwise.
func exists(path string) error {
	_, err := os.Lstat(path)
	return err
}

// gone reports nil when path does not exist.
func gone(path string) error {
	_, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil {
		return fmt.Errorf("%s still exists", path)
	}
	return err
}
