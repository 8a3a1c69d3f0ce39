package vm

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"shoal/internal/testutil"
)

// The lab's private subnet: the bridge is .1, namespace i is .10+i.
const (
	labNet    = "10.214.0"
	bridgeIP  = labNet + ".1"
	labPrefix = "/24"
)

// netLab is a bridge with a network namespace per "host", each joined to
// it by a veth pair. Everything is removed when the test ends.
type netLab struct {
	bridge string
	ns     []string
}

// newNetLab creates a bridge and n namespaces, or skips t without root
// and ip(8) (fails under SHOAL_REQUIRE_FUSE=1, where both are there).
func newNetLab(t *testing.T, n int) *netLab {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil || os.Geteuid() != 0 {
		msg := "network namespaces need root and ip(8) (iproute2)"
		if os.Getenv(testutil.EnvRequireFUSE) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	tag := fmt.Sprintf("%04x", rand.Uint32()&0xffff)
	lab := &netLab{bridge: "shvmbr" + tag}
	t.Cleanup(lab.remove)
	mustIP(t, "link", "add", lab.bridge, "type", "bridge")
	mustIP(t, "addr", "add", bridgeIP+labPrefix, "dev", lab.bridge)
	mustIP(t, "link", "set", lab.bridge, "up")
	for i := range n {
		ns := fmt.Sprintf("shoalvm-%s-%d", tag, i)
		host, peer := fmt.Sprintf("shvm%sh%d", tag, i), fmt.Sprintf("shvm%sn%d", tag, i)
		mustIP(t, "netns", "add", ns)
		lab.ns = append(lab.ns, ns)
		mustIP(t, "link", "add", host, "type", "veth", "peer", "name", peer)
		mustIP(t, "link", "set", peer, "netns", ns)
		mustIP(t, "link", "set", host, "master", lab.bridge, "up")
		mustIP(t, "-n", ns, "addr", "add", fmt.Sprintf("%s.%d%s", labNet, 10+i, labPrefix), "dev", peer)
		mustIP(t, "-n", ns, "link", "set", peer, "up")
		mustIP(t, "-n", ns, "link", "set", "lo", "up")
	}
	return lab
}

// remove deletes the namespaces (their veth ends go with them, and so do
// the peers) and the bridge.
func (lab *netLab) remove() {
	for _, ns := range lab.ns {
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
	_ = exec.Command("ip", "link", "del", lab.bridge).Run()
}

func mustIP(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// relay listens on the bridge address and forwards every connection to
// target on loopback, so the namespaces reach servers that listen on
// 127.0.0.1 only. It returns the address to dial; the listener and every
// connection close when the test ends.
func relay(t *testing.T, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", bridgeIP+":0")
	if err != nil {
		t.Fatalf("relay for %s: %v", target, err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			go pipe(in, out)
			go pipe(out, in)
		}
	}()
	return ln.Addr().String()
}

// pipe copies src to dst until either ends, then closes both.
func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// mountIn mounts v at dir with the mount process in network namespace
// ns. The process is forked from an OS thread switched into ns (a child
// inherits its creator thread's namespaces), so it keeps this process's
// mount namespace and the mount is visible here, unlike with
// `ip netns exec`, which also unshares the mount namespace.
func mountIn(t *testing.T, v *testutil.Volume, ns, dir string, extra ...string) *testutil.Mount {
	t.Helper()
	testutil.Binary(t) // build before switching: go build needs no network, but keep it out
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	defer unix.Close(orig)
	target, err := unix.Open(filepath.Join("/run/netns", ns), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	defer unix.Close(target)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("setns %s: %v", ns, err)
	}
	defer func() {
		// A thread left in ns must not run other goroutines: stay locked
		// (the runtime ends the thread with this goroutine) unless back.
		if unix.Setns(orig, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
	}()
	return v.MountAt(t, dir, extra...)
}

// sameNetNS reports whether process pid is in this process's network
// namespace.
func sameNetNS(t *testing.T, pid int) bool {
	t.Helper()
	mine, err1 := os.Readlink("/proc/self/ns/net")
	theirs, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err1 != nil || err2 != nil {
		t.Fatalf("reading network namespaces: %v %v", err1, err2)
	}
	return mine == theirs
}

// TestHandoffAcrossNamespaces runs the migration hand-off and the image
// lock between two mounts in separate network namespaces, which reach the
// metadata server (PostgreSQL or Redis) and MinIO only over their veth
// links: two hosts sharing a volume through the network.
func TestHandoffAcrossNamespaces(t *testing.T) {
	requireQemu(t)
	testutil.RequireFUSE(t)
	for _, b := range networkBackends() {
		t.Run(b.name, func(t *testing.T) {
			lab := newNetLab(t, 2)
			v := b.newVolume(t)
			a := mountIn(t, v, lab.ns[0], filepath.Join(v.Dir, "hostA"))
			c := mountIn(t, v, lab.ns[1], filepath.Join(v.Dir, "hostB"))
			for _, m := range []*testutil.Mount{a, c} {
				if sameNetNS(t, m.PID()) {
					t.Fatalf("mount %s runs in the test's own network namespace", m.Dir)
				}
			}
			handoff(t, "qcow2", a, c, 2)
			handoff(t, "raw", c, a, 2)
			h := holdImage(t, "qcow2", a.Path("guest.qcow2"))
			wantLocked(t, "qcow2", c.Path("guest.qcow2"))
			h.quit(t)
			wantOpens(t, "qcow2", c.Path("guest.qcow2"))
		})
	}
}
