package progress

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLine(t *testing.T) {
	start := time.Unix(100, 0)
	l := Line("iozone r1 local", State{Phase: "read", Unit: "MiB/s", Done: 50 << 20, Total: 100 << 20, Start: start}, start.Add(time.Second))
	for _, want := range []string{"iozone r1 local", "read", "[############............]", " 50%", "50.0 MiB/s"} {
		if !strings.Contains(l, want) {
			t.Errorf("line %q lacks %q", l, want)
		}
	}
}

// syncBuf is a goroutine-safe buffer.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestDisplayPlainPrintsOneLinePerPhase(t *testing.T) {
	var out syncBuf
	d := New(&out, false)
	d.Track("mass", func() (State, bool) { return State{}, false })
	start := time.Now()
	d.PhaseDone(State{Phase: "create", Unit: "ops/s", Done: 10, Total: 10, Start: start, End: start.Add(time.Second)})
	d.PhaseDone(State{Phase: "stat", Unit: "ops/s", Done: 10, Total: 10, Start: start, End: start.Add(time.Second)})
	d.Stop()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "create") || !strings.Contains(lines[1], "stat") {
		t.Fatalf("output:\n%s", out.String())
	}
	if !strings.Contains(lines[0], "100%") || !strings.Contains(lines[0], "10.0 ops/s") {
		t.Errorf("line %q", lines[0])
	}
}

func TestDisplayTerminalRedraws(t *testing.T) {
	var out syncBuf
	d := New(&out, true)
	d.interval = time.Millisecond
	d.Track("iozone", func() (State, bool) {
		return State{Phase: "write", Unit: "MiB/s", Done: 1, Total: 2, Start: time.Now()}, true
	})
	time.Sleep(30 * time.Millisecond)
	d.Stop()
	if s := out.String(); !strings.Contains(s, "\r\x1b[K") || !strings.Contains(s, "write") || !strings.Contains(s, " 50%") {
		t.Fatalf("output %q", s)
	}
}
