package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// sweepLagLimit is issue 11's target for the AppConfig summary lag, p99, in each status phase.
const sweepLagLimit = 5.0

// sweepRun is one run of a size sweep (`make bench-fleet FLEET_SWEEP=...`): the fleet size, which run of
// that size it was, and what it measured.
type sweepRun struct {
	Clusters int
	Run      int
	// Result is nil when the run left no figures; Err then says why.
	Result *Result
	Err    string
}

// newSweepTableCommand is `bench-fleet sweep-table FILE...`.
func newSweepTableCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "sweep-table FILE...",
		Short: "One table of several runs' JSON (--json), a row per run: the status phases' summary lag, hub writes and status rate",
		Long: `sweep-table reads the JSON of several runs of bench-fleet, as make bench-fleet FLEET_SWEEP=... writes
them (.local/bench-fleet-<clusters>-<run>.json: the run's number comes from that name), and prints one
table, a row per run ordered by size: the works degraded and healed, the AppConfig summary lag (p99 and median) of the degrade and heal
phases, ferry-hub's API writes in each, the status writes a second the agents reached, and whether the
p99 was under 5s in both. A phase a run did not get through shows as missing; a file that cannot be read
as a run without figures.`,
		Args:          cobra.MinimumNArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, paths []string) error {
			return writeSweepTable(cmd.OutOrStdout(), readSweepRuns(paths))
		},
	}
}

// sweepName is the name the sweep gives each run's JSON: bench-fleet-<clusters>-<run>.json.
var sweepName = regexp.MustCompile(`-(\d+)-(\d+)\.json$`)

// readSweepRuns reads the runs' JSON files. A file that cannot be read or decoded is a run without
// figures. The size and run number come from the file's name when it is the sweep's; otherwise the
// size is the run's own and the run number counts the files of that size so far.
func readSweepRuns(paths []string) []sweepRun {
	var runs []sweepRun
	seen := map[int]int{}
	for _, path := range paths {
		var r sweepRun
		if m := sweepName.FindStringSubmatch(filepath.Base(path)); m != nil {
			r.Clusters, _ = strconv.Atoi(m[1])
			r.Run, _ = strconv.Atoi(m[2])
		}
		data, err := os.ReadFile(path)
		if err == nil {
			var res Result
			if err = json.Unmarshal(data, &res); err == nil {
				r.Result = &res
				r.Clusters = res.Config.Clusters
			} else {
				err = fmt.Errorf("%s: %w", path, err)
			}
		}
		if err != nil {
			r.Err = err.Error()
		}
		seen[r.Clusters]++
		if r.Run == 0 {
			r.Run = seen[r.Clusters]
		}
		runs = append(runs, r)
	}
	return runs
}

// writeSweepTable writes one row per run, smallest fleet first: the works degraded and then healed
// (--lag-writes, fewer when the fleet has fewer works), the AppConfig summary lag of the degrade and heal
// phases (p99, median), ferry-hub's API writes in each, the agents' status writes a second
// reached in each, and whether the p99 was under 5s in both. A phase the run did not get through shows
// as missing, and the criterion as not measured; the runs that failed are listed under the table.
func writeSweepTable(w io.Writer, runs []sweepRun) error {
	runs = slices.Clone(runs)
	slices.SortStableFunc(runs, func(a, b sweepRun) int {
		if a.Clusters != b.Clusters {
			return a.Clusters - b.Clusters
		}
		return a.Run - b.Run
	})

	var appConfigs, rates, tenancies []string
	for _, r := range runs {
		if r.Result == nil {
			continue
		}
		c := r.Result.Config
		appConfigs = appendNew(appConfigs, strconv.Itoa(c.AppConfigs))
		rates = appendNew(rates, fmt.Sprintf("%.0f", c.StatusRate))
		if m := c.tenancyMode(); m != "" {
			tenancies = appendNew(tenancies, m)
		}
	}
	fmt.Fprint(w, "\nfleet sweep: the AppConfig summary lag of the status phases (degrade, then heal) by fleet size")
	if len(appConfigs) > 0 {
		fmt.Fprintf(w, "; %s AppConfigs, status writes at %s/s", strings.Join(appConfigs, "/"), strings.Join(rates, "/"))
	}
	if len(tenancies) > 0 {
		fmt.Fprintf(w, "\ntenancy: %s", strings.Join(tenancies, " / "))
	}
	fmt.Fprint(w, "\n\n")

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "CLUSTERS\tRUN\tWORKS DEGRADED\tLAG P99 degrade / heal\tLAG MEDIAN degrade / heal\tHUB WRITES degrade / heal\tSTATUS WRITES/S degrade / heal\tP99 < %s BOTH\n",
		seconds(sweepLagLimit))
	for _, r := range runs {
		var degrade, heal *LagResult
		if r.Result != nil {
			degrade, heal = r.Result.Degrade, r.Result.Heal
		}
		pair := func(f func(*LagResult) string) string {
			return lagField(degrade, f) + " / " + lagField(heal, f)
		}
		works := "missing"
		if r.Result != nil {
			works = strconv.Itoa(r.Result.Config.LagWrites)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Clusters, r.Run, works,
			pair(func(l *LagResult) string { return seconds(l.P99Seconds) }),
			pair(func(l *LagResult) string { return seconds(l.MedianSeconds) }),
			pair(func(l *LagResult) string { return fmt.Sprintf("%.0f", l.HubWrites) }),
			pair(func(l *LagResult) string { return fmt.Sprintf("%.0f", l.Rate) }),
			lagMet(degrade, heal))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	sep := "\n"
	for _, r := range runs {
		if r.Result == nil || r.Result.Error != "" {
			fmt.Fprint(w, sep)
			sep = ""
		}
		switch {
		case r.Result == nil:
			fmt.Fprintf(w, "%d clusters, run %d: no figures: %s\n", r.Clusters, r.Run, r.Err)
		case r.Result.Error != "":
			fmt.Fprintf(w, "%d clusters, run %d FAILED: %s\n", r.Clusters, r.Run, r.Result.Error)
		}
	}
	return nil
}

// tenancyMode is the run's tenancy in short, the same at every fleet size: the sets bound and where
// the AppConfigs are; "" for a run from before the benchmark bound sets.
func (c Config) tenancyMode() string {
	if c.Tenancy == "" {
		return ""
	}
	sets := "global set"
	if c.ClusterSets > 0 {
		sets = fmt.Sprintf("%d exclusive sets", c.ClusterSets)
	}
	if c.AppConfigNamespaces {
		return sets + ", a namespace per AppConfig"
	}
	return sets + ", one namespace"
}

// lagField is f of a phase's figures, or "missing" when the run did not get through the phase.
func lagField(l *LagResult, f func(*LagResult) string) string {
	if l == nil {
		return "missing"
	}
	return f(l)
}

// lagMet says whether the summary lag p99 was under sweepLagLimit in both status phases.
func lagMet(degrade, heal *LagResult) string {
	switch {
	case degrade == nil || heal == nil:
		return "not measured"
	case degrade.P99Seconds < sweepLagLimit && heal.P99Seconds < sweepLagLimit:
		return "yes"
	}
	return "no"
}

// appendNew appends s unless list has it already.
func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
