package multihost

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"shoal/internal/testutil"
	"shoal/tests/isolate"
)

// The network of TestNetnsLinkCut: a bridge in the root namespace with
// 10.213.N.1/24, and one namespace per mount whose veth reaches the bridge
// (10.213.N.2, .3, ...). The servers listen on 10.213.N.1 only. N is the
// first /24 of 10.213.0.0/16 no interface uses yet, so concurrent runs do
// not collide.

// netLab is the bridge and namespaces of one test.
type netLab struct {
	t      *testing.T
	subnet string // "10.213.N"
	bridge string
	ns     []string // namespace names
	veths  []string // root-side veth of each namespace
}

// host is the root side's address, where the servers listen.
func (l *netLab) host() string { return l.subnet + ".1" }

// ip runs the ip command, failing t on error.
func (l *netLab) ip(args ...string) {
	l.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// newNetLab makes the bridge and n namespaces, and removes them all when
// the test ends (also when it fails half-way).
func newNetLab(t *testing.T, n int) *netLab {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatal("the ip command (iproute2) is needed for the namespace test")
	}
	tag := fmt.Sprintf("%d", os.Getpid()%100000)
	l := &netLab{t: t, subnet: freeSubnet(t), bridge: "smhbr" + tag}
	t.Cleanup(l.remove)
	l.ip("link", "add", l.bridge, "type", "bridge")
	l.ip("addr", "add", l.host()+"/24", "dev", l.bridge)
	l.ip("link", "set", l.bridge, "up")
	for i := range n {
		ns := fmt.Sprintf("shoal-mh-%s-%d", tag, i)
		veth := fmt.Sprintf("smh%s%c", tag, 'a'+i)
		l.ns, l.veths = append(l.ns, ns), append(l.veths, veth)
		l.ip("netns", "add", ns)
		l.ip("link", "add", veth, "type", "veth", "peer", "name", veth+"p", "netns", ns)
		l.ip("link", "set", veth, "master", l.bridge)
		l.ip("link", "set", veth, "up")
		l.ip("-n", ns, "addr", "add", fmt.Sprintf("%s.%d/24", l.subnet, i+2), "dev", veth+"p")
		l.ip("-n", ns, "link", "set", veth+"p", "up")
		l.ip("-n", ns, "link", "set", "lo", "up")
	}
	return l
}

// remove deletes the namespaces (which takes their veths along) and the
// bridge, reporting but not failing on errors.
func (l *netLab) remove() {
	for _, ns := range l.ns {
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			l.t.Logf("ip netns del %s: %v %s", ns, err, out)
		}
	}
	for _, v := range l.veths {
		_ = exec.Command("ip", "link", "del", v).Run() // normally gone with its namespace
	}
	if out, err := exec.Command("ip", "link", "del", l.bridge).CombinedOutput(); err != nil {
		l.t.Logf("ip link del %s: %v %s", l.bridge, err, out)
	}
}

// freeSubnet returns the first 10.213.N that no address on this machine
// uses.
func freeSubnet(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("ip", "-4", "-o", "addr").Output()
	if err != nil {
		t.Fatalf("ip -4 addr: %v", err)
	}
	for n := 1; n < 255; n++ {
		s := fmt.Sprintf("10.213.%d", n)
		if !strings.Contains(string(out), " "+s+".") {
			return s
		}
	}
	t.Fatal("no free 10.213.N.0/24")
	return ""
}

// setLink takes namespace i's link down or up (on the bridge side, so the
// namespace sees no carrier change: packets just stop).
func (l *netLab) setLink(i int, up bool) {
	l.t.Helper()
	state := "down"
	if up {
		state = "up"
	}
	l.ip("link", "set", l.veths[i], state)
}

// nsMount is a `shoal mount` running in a network namespace (but in the
// root mount namespace, so the test sees the mountpoint).
type nsMount struct {
	dir  string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

// mountInNetns runs `nsenter --net=/run/netns/NS shoal mount META DIR` and
// waits for the mount; a t.Cleanup unmounts it.
func mountInNetns(t *testing.T, ns, metaURL, dir string, extra ...string) *nsMount {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	m := &nsMount{dir: dir, log: dir + ".log", done: make(chan struct{})}
	logf, err := os.Create(m.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	args := append([]string{"--net=/run/netns/" + ns, "--", testutil.Binary(t), "mount", metaURL, dir}, extra...)
	m.cmd = exec.Command("nsenter", args...)
	m.cmd.Stdout, m.cmd.Stderr = logf, logf
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("nsenter: %v", err)
	}
	go func() { _ = m.cmd.Wait(); close(m.done) }()
	t.Cleanup(func() { m.unmount(t) })
	_, err = eventually(30*time.Second, func() error {
		select {
		case <-m.done:
			return nil
		default:
		}
		if !testutil.IsMounted(dir) {
			return fmt.Errorf("not mounted")
		}
		return nil
	})
	if err != nil || m.exited() {
		t.Fatalf("mount in namespace %s: %v (exited: %v)\n%s", ns, err, m.exited(), m.logText())
	}
	return m
}

func (m *nsMount) exited() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

func (m *nsMount) logText() string { b, _ := os.ReadFile(m.log); return tail(string(b), 8000) }

// unmount runs `shoal umount`, then forces the issue if the process lingers.
func (m *nsMount) unmount(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, testutil.Binary(t), "umount", m.dir).CombinedOutput(); err != nil {
		t.Errorf("shoal umount %s: %v %s", m.dir, err, out)
	}
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		t.Errorf("mount process for %s did not exit; killing it", m.dir)
		_ = m.cmd.Process.Kill()
		<-m.done
	}
	if testutil.IsMounted(m.dir) {
		_ = exec.Command("fusermount3", "-u", "-z", m.dir).Run()
	}
	if t.Failed() {
		t.Logf("log of the mount at %s:\n%s", m.dir, m.logText())
	}
}

// TestNetnsLinkCut: two mounts of one volume in two network namespaces
// reach PostgreSQL or Redis and MinIO over veth links. Both run a busy
// workload; namespace 0's link is cut for a while. The other mount keeps
// working throughout; the cut mount's operations wait (or fail with EIO)
// but never return wrong data, and it recovers once the link is back,
// without a remount. Everything acknowledged on either mount is intact on
// both.
func TestNetnsLinkCut(t *testing.T) {
	requireServers(t)
	testutil.RequireFUSE(t)
	if _, err := exec.LookPath("nsenter"); err != nil {
		t.Fatal("nsenter (util-linux) is needed for the namespace test")
	}
	lab := newNetLab(t, 2)
	pg := startPostgres(t, lab.host())
	rd := startRedis(t, lab.host())
	s3 := startMinIO(t, lab.host())
	for _, eng := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"postgres+s3", func(t *testing.T) string { return isolate.PGSchemaURL(t, pg.url()) }},
		{"redis+s3", func(t *testing.T) string { return isolate.RedisNamespaceURL(t, rd.url()) }},
	} {
		t.Run(eng.name, func(t *testing.T) { linkCut(t, lab, isolate.FormatS3(t, eng.url(t), s3.url())) })
	}
}

// cutFor is how long the link stays down.
const cutFor = 8 * time.Second

func linkCut(t *testing.T, lab *netLab, v *testutil.Volume) {
	a := mountInNetns(t, lab.ns[0], v.MetaURL, filepath.Join(v.Dir, "mnt-a"))
	b := mountInNetns(t, lab.ns[1], v.MetaURL, filepath.Join(v.Dir, "mnt-b"))
	for _, d := range []string{filepath.Join(a.dir, "a"), filepath.Join(b.dir, "b")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	wa := newWorkload(filepath.Join(a.dir, "a"), filepath.Join(a.dir, "a"))
	wb := newWorkload(filepath.Join(b.dir, "b"), filepath.Join(b.dir, "b"))
	wa.start(t)
	wb.start(t)
	time.Sleep(2 * time.Second)

	lab.setLink(0, false)
	cutAt, bBefore := time.Now(), wb.progress()
	time.Sleep(cutFor)
	bDuring, aAtRestore := wb.progress(), wa.progress()
	lab.setLink(0, true)
	t.Logf("link of mount a down for %v; mount b meanwhile: %d writes, %d reads",
		time.Since(cutAt).Round(time.Millisecond), bDuring.writes-bBefore.writes, bDuring.reads-bBefore.reads)
	if bDuring.writes-bBefore.writes < 3 || bDuring.reads-bBefore.reads < 3 {
		t.Errorf("mount b stalled while mount a's link was cut: %d writes, %d reads", bDuring.writes-bBefore.writes, bDuring.reads-bBefore.reads)
	}
	took, err := eventually(recoveryLimit, func() error {
		if now := wa.progress(); now.writes < aAtRestore.writes+5 || now.reads < aAtRestore.reads+5 {
			return fmt.Errorf("mount a since the link came back: %d writes, %d reads", now.writes-aAtRestore.writes, now.reads-aAtRestore.reads)
		}
		return nil
	})
	wa.stop(t)
	wb.stop(t)
	wa.report(t)
	wb.report(t)
	if err != nil {
		t.Fatalf("mount a did not recover within %v of the link's return: %v", recoveryLimit, err)
	}
	t.Logf("mount a working again %v after the link came back", took.Round(time.Millisecond))
	if a.exited() || b.exited() {
		t.Fatalf("a mount process exited (a: %v, b: %v)", a.exited(), b.exited())
	}
	wa.verify(t, filepath.Join(a.dir, "a"), filepath.Join(b.dir, "a"))
	wb.verify(t, filepath.Join(b.dir, "b"), filepath.Join(a.dir, "b"))
}
