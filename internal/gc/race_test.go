package gc_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"shoal/internal/gc"
	"shoal/internal/meta"
	"shoal/internal/meta/kvmeta"
)

// heldWrite starts writing b to a new file whose commit is held back. It
// returns once every block is stored and the commit is waiting, with a
// release func that lets the commit through and returns Close's error.
func (e *env) heldWrite(name string, b []byte) (meta.Ino, func() error) {
	ino := e.create(name)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	w := e.writer(ino, func() {
		once.Do(func() { close(entered) })
		<-release
	})
	if err := w.Write(e.ctx, 0, b); err != nil {
		e.t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- w.Close(e.ctx) }()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		e.t.Fatal("the writer never reached its commit")
	}
	var rel sync.Once
	var err error
	return ino, func() error {
		rel.Do(func() { close(release); err = <-closed })
		return err
	}
}

func (e *env) blockKeys() []string {
	infos, err := e.store.List(e.ctx, "chunks/", "", 0)
	if err != nil {
		e.t.Fatal(err)
	}
	keys := make([]string, len(infos))
	for i, info := range infos {
		keys[i] = info.Key
	}
	return keys
}

// TestUncommittedWriteSurvives is the race of the package doc: a writer
// has stored its blocks but not yet committed the slice while gc runs.
func TestUncommittedWriteSurvives(t *testing.T) {
	e := newEnv(t)
	b := content(20, 3*blockSize+100)
	ino, release := e.heldWrite("live", b)
	defer release()
	keys := e.blockKeys()
	if len(keys) != 4 {
		t.Fatalf("stored blocks before commit: %v", keys)
	}

	// A deleting run with a grace longer than the write's age keeps them.
	rep := e.run(gc.Options{Grace: 10 * time.Second})
	if rep.Young.Objects != 4 || rep.Leaked.Objects != 0 || rep.Deleted.Objects != 0 {
		t.Fatalf("with grace: %+v", rep)
	}
	for _, k := range keys {
		if !e.exists(k) {
			t.Fatalf("gc deleted %s of an uncommitted write", k)
		}
	}

	// Without grace the same objects would be deleted: shown by a dry run
	// only, because that is the data loss the grace prevents.
	rep = e.run(gc.Options{Grace: time.Nanosecond, DryRun: true})
	if rep.Leaked.Objects != 4 || rep.Deleted.Objects != 0 {
		t.Fatalf("dry run without grace should list the held blocks as leaked: %+v", rep)
	}

	if err := release(); err != nil {
		t.Fatalf("commit after gc: %v", err)
	}
	e.readBack(ino, b)
	rep = e.run(gc.Options{Grace: time.Nanosecond})
	if rep.Live.Objects != 4 || rep.Leaked.Objects != 0 || rep.Deleted.Objects != 0 {
		t.Fatalf("after the commit: %+v", rep)
	}
}

// scanHook runs after on the first ScanSlices only.
type scanHook struct {
	*kvmeta.Engine
	once  sync.Once
	after func()
}

func (h *scanHook) ScanSlices(ctx context.Context, fn func(meta.Ino, uint32, meta.Slice) error) error {
	err := h.Engine.ScanSlices(ctx, fn)
	h.once.Do(h.after)
	return err
}

// TestConfirmationScanReprieves: a slice committed after the main scan
// (by a writer that broke the grace assumption) is caught by the
// confirmation scan before its objects are deleted.
func TestConfirmationScanReprieves(t *testing.T) {
	e := newEnv(t)
	b := content(21, 2*blockSize)
	ino, release := e.heldWrite("late", b)
	hook := &scanHook{Engine: e.eng, after: func() {
		if err := release(); err != nil {
			t.Errorf("commit: %v", err)
		}
	}}
	rep, err := gc.Run(e.ctx, hook, e.store, gc.Options{Grace: time.Nanosecond, BlockSize: blockSize})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Leaked.Objects != 2 || rep.Reprieved != 2 || rep.Deleted.Objects != 0 {
		t.Fatalf("report = %+v; want 2 leaked, both reprieved", rep)
	}
	e.readBack(ino, b)
}

// TestGCDuringWrites runs deleting collections while writers commit
// files; with a grace well above the commit latency nothing is lost.
func TestGCDuringWrites(t *testing.T) {
	e := newEnv(t)
	const writers, files = 3, 15
	var wg sync.WaitGroup
	stop := make(chan struct{})
	runs := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := gc.Run(e.ctx, e.eng, e.store, gc.Options{Grace: 2 * time.Second, BlockSize: blockSize}); err != nil {
				t.Errorf("gc: %v", err)
				return
			}
			runs++
		}
	}()
	var mu sync.Mutex
	written := map[meta.Ino][]byte{}
	var ww sync.WaitGroup
	for w := 0; w < writers; w++ {
		ww.Add(1)
		go func(w int) {
			defer ww.Done()
			for i := 0; i < files; i++ {
				b := content(uint64(w*100+i), (i%4)*blockSize+i*37+1)
				ino := e.write(fmt.Sprintf("w%d-%d", w, i), b)
				mu.Lock()
				written[ino] = b
				mu.Unlock()
			}
		}(w)
	}
	ww.Wait()
	close(stop)
	wg.Wait()
	for ino, b := range written {
		e.readBack(ino, b)
	}
	rep := e.run(gc.Options{Grace: time.Nanosecond, DryRun: true})
	if rep.Leaked.Objects != 0 || rep.Damaged() || runs == 0 {
		t.Fatalf("after %d concurrent runs: %+v", runs, rep)
	}
}
