package progress

import (
	"sync"
	"testing"
)

func TestConcurrentAdds(t *testing.T) {
	var p Progress
	p.Set("phase", 0, 800)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				p.Add(1)
			}
		}()
	}
	wg.Wait()
	if phase, done, total := p.Snapshot(); phase != "phase" || done != 800 || total != 800 {
		t.Fatalf("got %s %d/%d", phase, done, total)
	}
}
