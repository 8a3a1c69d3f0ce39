package console

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"shoal/internal/testutil"
)

var (
	mountFactsRe = regexp.MustCompile(`class="mount" data-session="(\d+)" data-host="([^"]*)" data-mountpoint="[^"]*" data-version="([^"]*)" data-uptime-ns="(-?\d+)" data-heartbeat-ns="(-?\d+)"`)
	runFactsRe   = regexp.MustCompile(`class="run" data-job="([a-z]+)" data-host="([^"]*)" data-ok="(true|false)"`)
)

// checkRows runs fsck and gc, then loads the page: every mount row shows
// the host, version and start (as uptime) that `status --json` gives its
// session, and a heartbeat age within the mounts' heartbeat interval
// (fastSession: 1 s) and a little slack; the fsck and gc rows show this
// host and success.
func checkRows(t *testing.T, url, metaURL string) {
	t.Helper()
	testutil.MustRun(t, "fsck", metaURL)
	testutil.MustRun(t, "gc", metaURL)
	var doc struct {
		Sessions []struct {
			ID      uint64    `json:"id"`
			Host    string    `json:"host"`
			Version string    `json:"version"`
			Started time.Time `json:"started"`
		} `json:"sessions"`
	}
	out := testutil.MustRun(t, "status", "--json", metaURL).Stdout
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	before := time.Now()
	dom := dumpDOM(t, url)
	after := time.Now()
	rows := mountFactsRe.FindAllStringSubmatch(dom, -1)
	if len(rows) != len(doc.Sessions) || len(rows) == 0 {
		t.Fatalf("the page has %d mount rows, status --json %d sessions", len(rows), len(doc.Sessions))
	}
	for i, r := range rows {
		s := doc.Sessions[i]
		id, _ := strconv.ParseUint(r[1], 10, 64)
		uptime, _ := strconv.ParseInt(r[4], 10, 64)
		age, _ := strconv.ParseInt(r[5], 10, 64)
		lo, hi := before.Sub(s.Started)-time.Second, after.Sub(s.Started)+time.Second
		if id != s.ID || r[2] != s.Host || r[3] != s.Version || s.Version == "" {
			t.Errorf("mount row %v; status --json session %+v", r[1:4], s)
		}
		if d := time.Duration(uptime); d < lo || d > hi {
			t.Errorf("mount %d shows uptime %v; started %v, so between %v and %v", id, d, s.Started, lo, hi)
		}
		if d := time.Duration(age); d < 0 || d > 3*time.Second {
			t.Errorf("mount %d shows heartbeat age %v with a 1 s heartbeat", id, d)
		}
	}
	host, _ := os.Hostname()
	runs := map[string][]string{}
	for _, r := range runFactsRe.FindAllStringSubmatch(dom, -1) {
		runs[r[1]] = r[2:]
	}
	for _, job := range []string{"fsck", "gc"} {
		if r, ok := runs[job]; !ok || r[0] != host || r[1] != "true" {
			t.Errorf("the %s run row: %v (found %v), want host %s and ok", job, r, ok, host)
		}
	}
}
