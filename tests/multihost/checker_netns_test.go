package multihost

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"shoal/internal/testutil"
	"shoal/tests/isolate"
)

// checkCut is how long the checker's link fault lasts: longer than the
// heartbeat, shorter than the engine's retry limit, so operations on the
// cut mount wait and then succeed.
const checkCut = 4 * time.Second

// TestCrossMountCheckerNetns runs the cross-mount checker on two mounts in
// separate network namespaces that reach PostgreSQL and MinIO over veth
// links, and cuts mount 0's link for a few seconds a third of the way
// through. Operations on the cut mount wait for the link; every outcome,
// during and after the cut, must still match the model.
func TestCrossMountCheckerNetns(t *testing.T) {
	requireServers(t)
	testutil.RequireFUSE(t)
	if _, err := exec.LookPath("nsenter"); err != nil {
		t.Fatal("nsenter (util-linux) is needed for the namespace test")
	}
	lab := newNetLab(t, 2)
	pg := startPostgres(t, lab.host())
	s3 := startMinIO(t, lab.host())
	v := isolate.FormatS3(t, isolate.PGSchemaURL(t, pg.url()), s3.url())
	a := mountInNetns(t, lab.ns[0], v.MetaURL, filepath.Join(v.Dir, "mnt-a"))
	b := mountInNetns(t, lab.ns[1], v.MetaURL, filepath.Join(v.Dir, "mnt-b"))
	cutAt := max(1, envInt(checkOpsEnv, checkOpsValue)/3)
	restored := make(chan error, 1)
	runChecker(t, []string{a.dir, b.dir}, func(step int) {
		if step != cutAt {
			return
		}
		if err := exec.Command("ip", "link", "set", lab.veths[0], "down").Run(); err != nil {
			t.Fatalf("cutting the link: %v", err)
		}
		t.Logf("link of mount a cut at operation %d for %v", step, checkCut)
		time.AfterFunc(checkCut, func() { restored <- exec.Command("ip", "link", "set", lab.veths[0], "up").Run() })
	})
	if err := <-restored; err != nil {
		t.Fatalf("restoring the link: %v", err)
	}
	if a.exited() || b.exited() {
		t.Fatalf("a mount process exited (a: %v, b: %v)", a.exited(), b.exited())
	}
}
