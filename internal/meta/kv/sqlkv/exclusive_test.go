package sqlkv

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"shoal/internal/meta/kv"
)

// exclusiveEnv names the META-URL a re-executed test binary holds an
// Exclusive on until it is killed.
const exclusiveEnv = "SHOAL_SQLKV_EXCLUSIVE_URL"

func TestSQLiteExclusiveHolderKilled(t *testing.T) {
	testExclusiveHolderKilled(t, "sqlite://"+filepath.Join(t.TempDir(), "meta.db"))
}

func TestPostgresExclusiveHolderKilled(t *testing.T) {
	testExclusiveHolderKilled(t, pgSchemaURL(t))
}

// testExclusiveHolderKilled runs a child process that writes a key inside
// an Exclusive on url and then waits. A writer here must wait for it, and
// once the child is killed with SIGKILL, commit within two seconds, with
// the child's write nowhere.
func testExclusiveHolderKilled(t *testing.T, url string) {
	s, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	child := startExclusiveHolder(t, url)
	k := []byte("counter")
	done := make(chan error, 1)
	go func() { done <- s.Txn(context.Background(), increment(k)) }()
	select {
	case err := <-done:
		t.Fatalf("a writer committed beside another process's Exclusive (err %v)", err)
	case <-time.After(700 * time.Millisecond):
	}
	_ = child.Process.Kill()
	killed := time.Now()
	_ = child.Wait()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("writer after the Exclusive holder was killed: %v", err)
		}
		t.Logf("writer committed %v after the kill", time.Since(killed).Round(time.Millisecond))
	case <-time.After(2 * time.Second):
		t.Fatal("writer still waiting 2s after the Exclusive holder was killed")
	}
	if v := mustGet(t, s, []byte("child")); v != nil {
		t.Fatalf("the killed Exclusive's write is visible: %q", v)
	}
	if v := mustGet(t, s, k); binary.BigEndian.Uint64(v) != 1 {
		t.Fatalf("counter = %x, want 1", v)
	}
}

// startExclusiveHolder starts TestExclusiveHolderChild on url and waits
// until it holds its Exclusive.
func startExclusiveHolder(t *testing.T, url string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestExclusiveHolderChild$")
	cmd.Env = append(os.Environ(), exclusiveEnv+"="+url)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if lines.Text() == "holding" {
			return cmd
		}
	}
	t.Fatalf("the Exclusive holder exited before holding: %v", lines.Err())
	return nil
}

// TestExclusiveHolderChild is the child of testExclusiveHolderKilled; it
// does nothing unless exclusiveEnv is set.
func TestExclusiveHolderChild(t *testing.T) {
	url := os.Getenv(exclusiveEnv)
	if url == "" {
		t.Skip("helper process for testExclusiveHolderKilled")
	}
	s, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.(kv.Excluder).Exclusive(context.Background(), func(tx kv.Tx) error {
		tx.Set([]byte("child"), []byte("uncommitted"))
		if _, err := tx.Get([]byte("counter")); err != nil { // sends the write
			return err
		}
		fmt.Println("holding")
		time.Sleep(time.Hour)
		return nil
	})
}

// TestPostgresExclusiveIdleReleases stalls an Exclusive (as a machine that
// vanished without closing its connection would) past its idle bound: the
// server must end it, a writer of another store must then commit, and the
// Exclusive run again and commit only its second run's write.
func TestPostgresExclusiveIdleReleases(t *testing.T) {
	url := pgSchemaURL(t)
	ctx := context.Background()
	s, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.(*Store).dialect.(*pgDialect).exclusiveIdle = time.Second
	other, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	k := []byte("counter")
	waited := make(chan error, 1)
	var wait time.Duration
	runs := 0
	err = s.(kv.Excluder).Exclusive(ctx, func(tx kv.Tx) error {
		runs++
		tx.Set([]byte("run"), []byte{byte(runs)})
		if _, err := tx.Get(k); err != nil {
			return err
		}
		if runs == 1 {
			go func() {
				start := time.Now()
				err := other.Txn(ctx, increment(k))
				wait = time.Since(start)
				waited <- err
			}()
			time.Sleep(3 * time.Second)
		}
		_, err := tx.Get(k)
		return err
	})
	if err != nil || runs != 2 {
		t.Fatalf("Exclusive stalled past its idle bound: %v after %d runs, want success after 2", err, runs)
	}
	if err := <-waited; err != nil {
		t.Fatalf("writer beside the stalled Exclusive: %v", err)
	}
	if wait < 700*time.Millisecond || wait > 2500*time.Millisecond {
		t.Errorf("writer waited %v, want about the 1s idle bound", wait)
	}
	if v := mustGet(t, s, []byte("run")); len(v) != 1 || v[0] != 2 {
		t.Fatalf("run = %v, want the second run's write only", v)
	}
}
