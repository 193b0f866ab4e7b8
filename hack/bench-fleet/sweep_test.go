package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sweepRows is the table's rows, each row's columns split on blanks, and their first two columns
// ("500 1") in order.
func sweepRows(t *testing.T, out string) (rows map[string][]string, order []string) {
	t.Helper()
	rows = map[string][]string{}
	lines := strings.Split(out, "\n")
	for i, line := range lines {
		if !strings.HasPrefix(line, "CLUSTERS") {
			continue
		}
		for _, row := range lines[i+1:] {
			f := strings.Fields(row)
			if len(f) < 2 {
				break
			}
			key := f[0] + " " + f[1]
			rows[key] = f
			order = append(order, key)
		}
		return rows, order
	}
	t.Fatalf("no table header in:\n%s", out)
	return nil, nil
}

// The sweep's table: a row per size and run, smallest fleet first, with the works degraded and healed,
// both phases' p99 and median lag, hub writes and reached status rate, and whether the p99 was under 5s in both; a run that failed
// in the heal phase shows it missing and the criterion not measured, and one without figures a row of
// missing ones.
func TestSweepTable(t *testing.T) {
	small := &Result{
		Config:  Config{Clusters: 500, AppConfigs: 10, StatusRate: 100, LagWrites: 1000},
		Degrade: &LagResult{P99Seconds: 6.2, MedianSeconds: 2.5, HubWrites: 1234, Rate: 99.6},
		Heal:    &LagResult{P99Seconds: 4.1, MedianSeconds: 1.5, HubWrites: 1180, Rate: 100},
	}
	large := &Result{
		Config:  Config{Clusters: 2000, AppConfigs: 10, StatusRate: 100, LagWrites: 1000},
		Degrade: &LagResult{P99Seconds: 1.2, MedianSeconds: 0.4, HubWrites: 1100, Rate: 100},
		Heal:    &LagResult{P99Seconds: 0.95, MedianSeconds: 0.3, HubWrites: 1090, Rate: 98.7},
	}
	failed := &Result{
		Config:  Config{Clusters: 2000, AppConfigs: 10, StatusRate: 100, LagWrites: 1000},
		Degrade: &LagResult{P99Seconds: 1.5, MedianSeconds: 0.5, HubWrites: 1111, Rate: 100},
		Error:   "heal: every AppConfig's healthy count to reach its end: not within 10m0s",
	}
	var out strings.Builder
	err := writeSweepTable(&out, []sweepRun{
		{Clusters: 2000, Run: 1, Result: large},
		{Clusters: 500, Run: 1, Result: small},
		{Clusters: 2000, Run: 2, Result: failed},
		{Clusters: 5000, Run: 1, Err: "open .local/bench-fleet-5000-1.json: no such file or directory"},
	})
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	t.Log(text)
	rows, order := sweepRows(t, text)
	want := map[string]string{
		"500 1":  "500 1 1000 6.2s / 4.1s 2.5s / 1.5s 1234 / 1180 100 / 100 no",
		"2000 1": "2000 1 1000 1.2s / 950ms 400ms / 300ms 1100 / 1090 100 / 99 yes",
		"2000 2": "2000 2 1000 1.5s / missing 500ms / missing 1111 / missing 100 / missing not measured",
		"5000 1": "5000 1 missing missing / missing missing / missing missing / missing missing / missing not measured",
	}
	for key, w := range want {
		if got := strings.Join(rows[key], " "); got != w {
			t.Errorf("row %s:\n got %q\nwant %q", key, got, w)
		}
	}
	// Smallest fleet first, then by run.
	if got, w := strings.Join(order, ", "), "500 1, 2000 1, 2000 2, 5000 1"; got != w {
		t.Errorf("rows %s; want %s", got, w)
	}
	for _, line := range []string{
		"2000 clusters, run 2 FAILED: heal: every AppConfig's healthy count",
		"5000 clusters, run 1: no figures: open .local/bench-fleet-5000-1.json",
		"10 AppConfigs, status writes at 100/s",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("no %q in the table", line)
		}
	}
}

// sweep-table's files: the size from the run's JSON, the run's number from the sweep's file name, and a
// file that is missing or not JSON a run without figures.
func TestSweepTableReadsRuns(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "bench-fleet-200-2.json")
	r := &Result{Config: Config{Clusters: 200}, Degrade: &LagResult{P99Seconds: 1}}
	if err := r.writeJSON(ok); err != nil {
		t.Fatal(err)
	}
	garbled := filepath.Join(dir, "bench-fleet-100-1.json")
	if err := os.WriteFile(garbled, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "mine.json")
	if err := (&Result{Config: Config{Clusters: 200}}).writeJSON(other); err != nil {
		t.Fatal(err)
	}
	runs := readSweepRuns([]string{ok, garbled, filepath.Join(dir, "bench-fleet-300-1.json"), other})
	if len(runs) != 4 {
		t.Fatalf("%d runs; want 4", len(runs))
	}
	if g := runs[0]; g.Clusters != 200 || g.Run != 2 || g.Result == nil || g.Result.Degrade == nil || g.Err != "" {
		t.Errorf("the written run: %+v; want 200 clusters, run 2, its figures", g)
	}
	for i, clusters := range []int{100, 300} {
		if g := runs[i+1]; g.Clusters != clusters || g.Run != 1 || g.Result != nil || g.Err == "" {
			t.Errorf("run %d: %+v; want %d clusters, run 1, no figures and why", i+1, g, clusters)
		}
	}
	if g := runs[3]; g.Clusters != 200 || g.Run != 2 || g.Result == nil {
		t.Errorf("a file not named by the sweep: %+v; want 200 clusters, run 2 (its second of that size)", g)
	}
}
