package result

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"shoal/internal/bench/workload"
)

func TestFloatJSON(t *testing.T) {
	b, err := json.Marshal(struct{ A, B Float }{Float(math.NaN()), 1.5})
	if err != nil || string(b) != `{"A":null,"B":1.5}` {
		t.Fatalf("%s %v", b, err)
	}
	var back struct{ A, B Float }
	if err := json.Unmarshal(b, &back); err != nil || back.A.Valid() || back.B != 1.5 {
		t.Fatalf("%+v %v", back, err)
	}
}

func TestTableKeepsOrderAndSummarises(t *testing.T) {
	tab := NewTable([]string{"A", "B"})
	for round := 1; round <= 3; round++ {
		for _, tg := range []string{"A", "B"} {
			v := float64(round) * 10
			if tg == "B" {
				v *= 2
			}
			ms := []workload.Metric{{Name: "z", Unit: "ops/s", Value: v}, {Name: "a", Unit: "MiB/s", Value: v, Cold: true}}
			if tg == "B" && round == 2 {
				ms[1] = workload.Metric{Name: "a", Unit: "MiB/s", Err: errors.New("boom")}
			}
			tab.Add("w", nil, tg, round, ms)
		}
	}
	ws, failed := tab.Workloads()
	if failed != 1 || len(ws) != 1 || ws[0].Metrics[0].Name != "z" || !ws[0].Metrics[1].Cold {
		t.Fatalf("failed %d, workloads %+v", failed, ws)
	}
	z := ws[0].Metrics[0].Results
	if z[0].Summary.Median != 20 || z[1].Summary.Median != 40 || z[1].Ratio != 2 || z[0].Ratio != 1 {
		t.Errorf("z %+v", z)
	}
	a := ws[0].Metrics[1].Results[1]
	if a.Summary.N != 2 || len(a.Samples) != 3 || a.Samples[1].Error != "boom" || a.Summary.Median != 40 {
		t.Errorf("a on B %+v", a)
	}
}
