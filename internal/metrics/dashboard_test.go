package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"shoal/internal/data"
	"shoal/internal/meta"
	"shoal/internal/vfs"
)

// dashboard is the Grafana dashboard shipped in the repository.
const dashboard = "../../docs/grafana/shoal.json"

// metricName finds the Shoal metric names in a PromQL expression.
var metricName = regexp.MustCompile(`shoal_[a-z_]+`)

// exported returns every sample name a fully wired registry serves
// (histograms as their _bucket, _sum and _count series) and the family
// names.
func exported(t *testing.T) (series, families map[string]bool) {
	t.Helper()
	r := New([]string{"lookup"})
	r.Op(0, 1, false)
	r.Watch(Sources{
		Data:   func() data.Stats { return data.Stats{} },
		VFS:    func() vfs.Stats { return vfs.Stats{} },
		Engine: func() meta.TxnStats { return meta.TxnStats{} },
	})
	fams, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	series, families = map[string]bool{}, map[string]bool{}
	for _, f := range fams {
		name := f.GetName()
		families[name] = true
		if f.GetType().String() == "HISTOGRAM" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				series[name+s] = true
			}
			continue
		}
		series[name] = true
	}
	return series, families
}

// TestDashboardUsesExportedMetrics: every metric the dashboard queries
// exists, and every metric a mount exports is charted somewhere.
func TestDashboardUsesExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboard, err)
	}
	series, families := exported(t)
	used := map[string]bool{}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			for _, name := range metricName.FindAllString(tg.Expr, -1) {
				if !series[name] {
					t.Errorf("panel %q queries %s, which no mount exports", p.Title, name)
				}
				used[name] = true
			}
		}
	}
	for f := range families {
		if !used[f] && !used[f+"_count"] && !used[f+"_bucket"] && !strings.HasSuffix(f, "_info") {
			t.Errorf("%s is exported but no panel charts it", f)
		}
	}
}
