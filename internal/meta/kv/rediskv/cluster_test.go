package rediskv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"shoal/internal/meta/kv/kvtest"
)

// TestRedisClusterConformance starts a three-master Redis Cluster on
// loopback and runs the conformance suite over it.
func TestRedisClusterConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the Redis Cluster test")
	}
	addrs := startCluster(t, 3)
	n := 0
	kvtest.RunURL(t, Open, func(t *testing.T) string {
		n++
		return fmt.Sprintf("redis+cluster://%s?ns=cluster_%d", strings.Join(addrs[:2], ","), n)
	})
}

// startCluster runs n cluster-enabled redis-server processes (stopped when
// t ends), joins them into one cluster and waits until it serves.
func startCluster(t *testing.T, n int) []string {
	server, err1 := exec.LookPath("redis-server")
	cli, err2 := exec.LookPath("redis-cli")
	if err1 != nil || err2 != nil {
		if os.Getenv("SHOAL_REQUIRE_SERVICES") == "1" {
			t.Fatal("redis-server/redis-cli not installed but SHOAL_REQUIRE_SERVICES=1")
		}
		t.Skip("redis-server/redis-cli not installed: skipping the Redis Cluster test")
	}
	dir := t.TempDir()
	var addrs []string
	for i := 0; i < n; i++ {
		port, bus := freePort(t), freePort(t)
		cmd := exec.Command(server, "--port", fmt.Sprint(port), "--bind", "127.0.0.1",
			"--cluster-enabled", "yes", "--cluster-port", fmt.Sprint(bus),
			"--cluster-config-file", filepath.Join(dir, fmt.Sprintf("nodes-%d.conf", i)),
			"--dir", dir, "--save", "", "--appendonly", "no", "--logfile", filepath.Join(dir, fmt.Sprintf("log-%d", i)))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", port))
	}
	for _, a := range addrs {
		waitFor(t, "redis-server "+a, func() bool { return exec.Command(cli, "-u", "redis://"+a, "ping").Run() == nil })
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	if out, err := exec.Command(cli, append(args, "--cluster-yes")...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	// Every node must see the whole cluster: one node saying ok while
	// another still gossips gives CLUSTERDOWN to the first client requests.
	want := fmt.Sprintf("cluster_known_nodes:%d", n)
	for _, a := range addrs {
		waitFor(t, "cluster state ok on "+a, func() bool {
			out, err := exec.Command(cli, "-u", "redis://"+a, "cluster", "info").Output()
			info := string(out)
			return err == nil && strings.Contains(info, "cluster_state:ok") &&
				strings.Contains(info, "cluster_slots_ok:16384") && strings.Contains(info, want)
		})
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer c.Close()
	waitFor(t, "cluster serving", func() bool {
		ctx := context.Background()
		return c.Set(ctx, "{shoal}probe", "1", 0).Err() == nil && c.Ping(ctx).Err() == nil
	})
	return addrs
}

// waitFor polls ok for up to 20 s.
func waitFor(t *testing.T, what string, ok func() bool) {
	for i := 0; i < 200; i++ {
		if ok() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}
