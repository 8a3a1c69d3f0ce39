package sqlkv

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"shoal/internal/meta/kv"
)

// crashEnv names the database a re-executed test binary writes to.
const crashEnv = "SHOAL_SQLKV_CRASH_DB"

// TestSQLiteSurvivesKill9 runs a child process that commits numbered keys
// from several goroutines (so that commits are grouped, group.go) and
// reports each commit on stdout, kills it with SIGKILL mid-stream, and
// checks that every reported commit is in the database afterwards.
func TestSQLiteSurvivesKill9(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSQLiteCrashChild$")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	var reported []int
	deadline := time.Now().Add(30 * time.Second)
	for lines.Scan() && time.Now().Before(deadline) {
		n, ok := strings.CutPrefix(lines.Text(), "committed ")
		if !ok {
			continue
		}
		i, err := strconv.Atoi(n)
		if err != nil {
			t.Fatal(err)
		}
		if reported = append(reported, i); len(reported) > 1200 {
			break
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if len(reported) == 0 {
		t.Fatal("child reported no commit")
	}
	s, err := Open(context.Background(), "sqlite://"+path)
	if err != nil {
		t.Fatalf("reopen after kill -9: %v", err)
	}
	defer s.Close()
	for _, i := range reported {
		if v := mustGet(t, s, crashKey(i)); v == nil {
			t.Fatalf("commit %d was reported but is gone after kill -9 (%d reported)", i, len(reported))
		}
	}
}

func crashKey(i int) []byte { return binary.BigEndian.AppendUint64([]byte("crash"), uint64(i)) }

// TestSQLiteCrashChild is the child of TestSQLiteSurvivesKill9; it does
// nothing unless crashEnv is set.
func TestSQLiteCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("helper process for TestSQLiteSurvivesKill9")
	}
	s, err := Open(context.Background(), "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	const writers = 4
	var mu sync.Mutex // one line at a time on stdout
	for w := range writers {
		go func() {
			for i := w; ; i += writers {
				err := s.Txn(context.Background(), func(tx kv.Tx) error {
					tx.Set(crashKey(i), make([]byte, 512))
					return nil
				})
				if err != nil {
					panic(err)
				}
				mu.Lock()
				fmt.Printf("committed %d\n", i)
				mu.Unlock()
			}
		}()
	}
	select {}
}
