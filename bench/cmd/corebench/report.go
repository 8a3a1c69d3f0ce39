package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// results maps target -> metric -> the values of all rounds.
type results map[string]map[string][]float64

// load reads "target metric value" lines.
func load(path string) (results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res := results{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			continue
		}
		v, err := strconv.ParseFloat(fs[2], 64)
		if err != nil {
			continue
		}
		if res[fs[0]] == nil {
			res[fs[0]] = map[string][]float64{}
		}
		res[fs[0]][fs[1]] = append(res[fs[0]][fs[1]], v)
	}
	return res, sc.Err()
}

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// check is one row of the verdict table: Shoal's median against a base
// target's, as a time ratio (lower is better) or a throughput share.
type check struct {
	metric, label, base string
	limit               float64 // max time ratio, or min throughput share
	throughput          bool
}

var checks = []check{
	{"create", "create N files (s)", "bindfs", 1.5, false},
	{"stat", "stat N files (s)", "bindfs", 1.5, false},
	{"unlink", "unlink N files (s)", "bindfs", 1.5, false},
	{"write", "seq write + fsync (MiB/s)", "local", 0.8, true},
	{"read", "cold seq read (MiB/s)", "local", 0.5, true},
	{"hd_create", "huge dir: create (s)", "bindfs", 2, false},
	{"hd_readdir", "huge dir: readdir (s)", "bindfs", 2, false},
	{"hd_stat", "huge dir: stat all (s)", "bindfs", 2, false},
}

// report prints the median table with ratios and verdicts.
func report(path string) error {
	res, err := load(path)
	if err != nil {
		return err
	}
	fmt.Printf("%-30s %10s %10s %10s   %-18s %-8s %s\n", "measurement (median)", "local", "bindfs", "shoal", "shoal ratio", "target", "verdict")
	for _, c := range checks {
		l, b, s := median(res["local"][c.metric]), median(res["bindfs"][c.metric]), median(res["shoal"][c.metric])
		base := map[string]float64{"local": l, "bindfs": b}[c.base]
		ratio, verdict := verdictFor(c, s, base)
		fmt.Printf("%-30s %10.3f %10.3f %10.3f   %-18s %-8s %s\n", c.label, l, b, s, ratio, target(c), verdict)
	}
	for _, m := range []string{"rss_kib_meta", "rss_kib_hugedir"} {
		if v := res["shoal"][m]; len(v) > 0 {
			fmt.Printf("shoal mount peak RSS (VmHWM) after %s: %.1f MiB (max over %d rounds)\n",
				strings.TrimPrefix(m, "rss_kib_"), slices.Max(v)/1024, len(v))
		}
	}
	n := 0
	for _, m := range res["shoal"] {
		n = max(n, len(m))
	}
	fmt.Printf("rounds: %d (interleaved local, bindfs, shoal; medians shown)\n", n)
	return nil
}

func verdictFor(c check, shoal, base float64) (string, string) {
	if shoal == 0 || base == 0 {
		return "-", "no data"
	}
	if c.throughput {
		share := shoal / base
		return fmt.Sprintf("%.0f%% of %s", share*100, c.base), passFail(share >= c.limit)
	}
	r := shoal / base
	return fmt.Sprintf("%.2fx %s", r, c.base), passFail(r <= c.limit)
}

func target(c check) string {
	if c.throughput {
		return fmt.Sprintf(">=%.0f%%", c.limit*100)
	}
	return fmt.Sprintf("<=%.1fx", c.limit)
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}
