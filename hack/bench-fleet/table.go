package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// writeTable writes the result for a person: the run, where time and memory went phase by phase, the
// figures, and the targets.
func (r *Result) writeTable(w io.Writer) error {
	c, m := r.Config, r.Machine
	hub := "ferry-hub as deploy/hub ships it"
	if len(c.HubArgs) > 0 {
		hub += " + " + strings.Join(c.HubArgs, " ")
	}
	if c.HubShards > 1 {
		hub += fmt.Sprintf(", %d shards", c.HubShards)
	}
	fmt.Fprintf(w, "\nfleet benchmark: %d clusters × %d AppConfigs = %d ManifestWorks; %s\n", c.Clusters, c.AppConfigs, c.Works, hub)
	if c.Tenancy != "" {
		fmt.Fprintf(w, "tenancy: %s\n", c.Tenancy)
	}
	if c.CPULoadCores > 0 {
		fmt.Fprintf(w, "cpu load: a busy loop keeping %s busy beside the hub (--cpu-load)\n", cores(c.CPULoadCores))
	}
	fmt.Fprintf(w, "machine: %d CPUs (%s), %s memory, Linux %s, %s, commit %s; load average %s at the start, %s at the end\n\n",
		m.CPUs, m.CPUModel, size(m.MemBytes), m.Kernel, m.Go, m.Commit, m.LoadAverageStart, m.LoadAverageEnd)

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PHASE\tTIME\tHUB WRITES\tCPU ferry-hub\tkube-apiserver\tetcd\tbench-fleet\tHUB RSS\tHUB HEAP\tAPPCONFIG RECONCILES (mean, queue wait)")
	for _, p := range r.Phases {
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f (%s, %s)\n", p.Name, seconds(p.Seconds), p.HubWrites,
			seconds(p.CPUSeconds[hubName]), seconds(p.CPUSeconds["kube-apiserver"]), seconds(p.CPUSeconds["etcd"]),
			seconds(p.CPUSeconds[benchName]), size(p.HubRSS), size(p.HubHeap),
			p.AppConfigReconciles, seconds(p.ReconcileMeanSeconds), seconds(p.QueueWaitMeanSeconds))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)

	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEASURE\tVALUE")
	if x := r.Register; x != nil {
		fmt.Fprintf(tw, "clusters registered\t%d in %s\n", x.Clusters, seconds(x.Seconds))
	}
	if x := r.Works; x != nil {
		fmt.Fprintf(tw, "ManifestWorks written\t%d in %s (%.0f/s), %.2f hub writes each\n", x.Count, seconds(x.Seconds), x.PerSecond, x.HubWritesPerWork)
	}
	if x := r.Initial; x != nil {
		fmt.Fprintf(tw, "first status of every work\t%d writes in %s; every summary N/N healthy after %s\n", x.Writes, seconds(x.WriteSeconds), seconds(x.SummarySeconds))
	}
	for _, l := range []struct {
		name string
		r    *LagResult
	}{{"degrade", r.Degrade}, {"heal", r.Heal}} {
		if x := l.r; x != nil {
			fmt.Fprintf(tw, "summary lag, %s (%d writes at %.0f/s, %.0f/s reached)\tmedian %s, p99 %s, max %s; last write to final summary %s; %.0f hub writes\n",
				l.name, x.Writes, c.StatusRate, x.Rate, seconds(x.MedianSeconds), seconds(x.P99Seconds), seconds(x.MaxSeconds), seconds(x.LastWriteSeconds), x.HubWrites)
		}
	}
	if x := r.Change; x != nil {
		fmt.Fprintf(tw, "Component web-0 changed\t%d works rewritten (%d of app-0's %d, %d others) in %s; %.0f hub writes\n",
			x.Rewritten, x.OfApp, x.Expected, x.Others, seconds(x.Seconds), x.HubWrites)
	}
	if x := r.OverrideChange; x != nil {
		fmt.Fprintf(tw, "app-0's override of region-0 changed\t%d works rewritten (%d of app-0's %d on region-0, %d others) in %s; %.0f hub writes\n",
			x.Rewritten, x.OfApp, x.Expected, x.Others, seconds(x.Seconds), x.HubWrites)
	}
	if x := r.Largest; x != nil {
		fmt.Fprintf(tw, "largest AppConfig\t%s: %s\n", x.Name, size(uint64(x.Bytes)))
	}
	if x := r.RolloutSpec; x != nil {
		fmt.Fprintf(tw, "spec.rollout set on every AppConfig\tevery rollout Complete after %s; %d works rewritten, %d AppConfigs on a new revision; %.0f hub writes\n",
			seconds(x.Seconds), x.Rewritten, x.Revised, x.HubWrites)
	}
	if x := r.Rollout; x != nil {
		fmt.Fprintf(tw, "rollout of every Component's change\tstages 1%% / 10%% / rest = %s clusters; Degraded on %s (second stage)\n",
			joinInts(x.StageClusters, " / "), strings.Join(x.Degraded, ", "))
		fmt.Fprintf(tw, "  works given the new revision\t%d (%d in the first two stages); out of stage: %d; AppConfigs that lost their halt: %d\n",
			x.Changed, x.Expected, x.OutOfStage, x.HaltsLost)
		for _, v := range x.Violations {
			fmt.Fprintf(tw, "    out of stage\t%s\n", v)
		}
		fmt.Fprintf(tw, "  first Degraded report to RolloutHalted\tmedian %s, p99 %s, max %s (%d of %d AppConfigs halted; second stage's reports: %d in %s)\n",
			seconds(x.HaltMedianSeconds), seconds(x.HaltP99Seconds), seconds(x.HaltMaxSeconds), x.Halted, c.AppConfigs, x.BatchReports, seconds(x.BatchSeconds))
		fmt.Fprintf(tw, "  first Degraded report to every changed work back and healthy\tmedian %s, p99 %s, max %s; to RolledBack shown: median %s, max %s (%d of %d AppConfigs)\n",
			seconds(x.RollbackMedianSeconds), seconds(x.RollbackP99Seconds), seconds(x.RollbackMaxSeconds),
			seconds(x.RolledBackMedianSeconds), seconds(x.RolledBackMaxSeconds), x.RolledBack, c.AppConfigs)
		fmt.Fprintf(tw, "  whole rollout\t%s to RolledBack; %d work rewrites; %.0f hub writes, %.2f per cluster\n",
			seconds(x.Seconds), x.Rewrites, x.HubWrites, x.HubWritesPerCluster)
	}
	if r.EtcdDataBytes > 0 {
		fmt.Fprintf(tw, "etcd data at the end\t%s\n", size(r.EtcdDataBytes))
	}
	for _, p := range r.Processes {
		fmt.Fprintf(tw, "%s\tpeak RSS %s (kernel's high-water mark %s), CPU %s\n", p.Name, size(p.PeakRSS), size(p.HWM), seconds(p.CPUSeconds))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nferry-hub's AppConfig status writes per phase (PATCH requests, their bodies in all and each) and its share of kube-apiserver's execution time:")
	for _, p := range r.Phases {
		each := 0.0
		if p.AppConfigPatches > 0 {
			each = p.AppConfigPatchBytes / p.AppConfigPatches
		}
		fmt.Fprintf(w, "  %-19s %.0f patches, %s (%s each); ferry-hub %.0f%% of kube-apiserver's time\n", p.Name, p.AppConfigPatches,
			size(uint64(p.AppConfigPatchBytes)), size(uint64(each)), 100*p.HubAPIServerShare)
	}
	fmt.Fprintln(w, "\nkube-apiserver's time by request (count, total time serving them, mean), the top 3 per phase:")
	for _, p := range r.Phases {
		var top []string
		for _, q := range p.APIServer[:min(3, len(p.APIServer))] {
			top = append(top, fmt.Sprintf("%s %.0f× %s (%s)", q.Request, q.Count, seconds(q.TotalSeconds), seconds(q.TotalSeconds/q.Count)))
		}
		fmt.Fprintf(w, "  %-19s %s\n", p.Name, strings.Join(top, "; "))
	}

	if len(r.Targets) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TARGET (issue 11)\tGOT\tMET")
		for _, t := range r.Targets {
			met := "no"
			if t.Met {
				met = "yes"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Target, t.Got, met)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, x := range r.HubRestarts {
		fmt.Fprintf(w, "\n%s EXITED in phase %q at %s (%s) and was restarted; its log ended:\n%s\n", x.Hub, x.Phase, seconds(x.AtSeconds), x.Exit, indent(x.LastWords))
	}
	if r.Error != "" {
		fmt.Fprintf(w, "\nFAILED: %s\n", r.Error)
	}
	return nil
}

// targets judges the run against issue 11's targets, those it got far enough to measure.
func (r *Result) targets() []TargetResult {
	var out []TargetResult
	add := func(target, got string, met bool) { out = append(out, TargetResult{target, got, met}) }
	if n := len(r.HubRestarts); n > 0 {
		add("ferry-hub runs throughout (not a target of the issue; a restart distorts the rest)", fmt.Sprintf("%d restarts", n), false)
	}
	if x := r.Works; x != nil {
		add(fmt.Sprintf("%d ManifestWorks written in under 10 minutes", x.Count), seconds(x.Seconds), x.Seconds < 600)
	}
	for _, p := range r.Processes {
		if strings.HasPrefix(p.Name, hubName) {
			peak := max(p.PeakRSS, p.HWM)
			add(p.Name+" RSS under 1 GiB throughout", size(peak), peak < 1<<30)
		}
	}
	if x := r.Change; x != nil {
		add("a Component change rewrites exactly the affected works", fmt.Sprintf("%d of %d, %d others", x.OfApp, x.Expected, x.Others),
			x.OfApp == x.Expected && x.Others == 0)
	}
	if x := r.OverrideChange; x != nil {
		add("an override change rewrites exactly the clusters it selects", fmt.Sprintf("%d of %d, %d others", x.OfApp, x.Expected, x.Others),
			x.OfApp == x.Expected && x.Others == 0)
	}
	if r.Degrade != nil && r.Heal != nil {
		p99 := max(r.Degrade.P99Seconds, r.Heal.P99Seconds)
		add(fmt.Sprintf("summary lag p99 under 5s at %.0f status writes/s", r.Config.StatusRate), seconds(p99), p99 < 5)
	}
	if x := r.Largest; x != nil {
		add(fmt.Sprintf("AppConfig under 100 KiB at %d clusters", r.Config.Clusters), size(uint64(x.Bytes)), x.Bytes < 100<<10)
	}
	if x := r.RolloutSpec; x != nil {
		add("setting spec.rollout rewrites no work", fmt.Sprintf("%d rewritten", x.Rewritten), x.Rewritten == 0 && x.Revised == 0)
	}
	if x := r.Rollout; x != nil {
		add("no cluster receives the new revision outside its stage", fmt.Sprintf("%d", x.OutOfStage), x.OutOfStage == 0)
		add("a halted rollout stays halted", fmt.Sprintf("%d AppConfigs went back to Progressing", x.HaltsLost), x.HaltsLost == 0)
		limit := 2 + x.BatchSeconds
		add(fmt.Sprintf("RolloutHalted within 2s of the first Degraded report plus the report batch (%s), p99", seconds(x.BatchSeconds)),
			seconds(x.HaltP99Seconds), x.Halted == r.Config.AppConfigs && x.HaltP99Seconds < limit)
		add("every AppConfig rolled back", fmt.Sprintf("%d of %d", x.RolledBack, r.Config.AppConfigs), x.RolledBack == r.Config.AppConfigs)
	}
	return out
}

// joinInts joins numbers with sep.
func joinInts(ns []int, sep string) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, sep)
}

// seconds is a duration in seconds as a person reads it: 850ms, 12.3s, 4m05s.
func seconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// size is a byte count as a person reads it.
func size(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
