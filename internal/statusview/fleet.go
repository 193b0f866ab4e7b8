package statusview

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// FleetWorks is ManifestWorks across the cluster namespaces, one line each: `kubectl ferry get works`.
type FleetWorks struct {
	Works []FleetWork `json:"works"`

	// StatusOnly marks a view read from the status of the AppConfigs of Namespace, for a user who may
	// not list ManifestWorks: a line per cluster each AppConfig's status names (ForAppConfigStatus).
	StatusOnly bool   `json:"statusOnly,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	// MoreClusters counts, in a StatusOnly view, the clusters delivered to that the statuses do not
	// name; OmittedClusters the clusters that are not fine they leave out (AppConfig's fields, summed).
	MoreClusters    int32 `json:"moreClusters,omitempty"`
	OmittedClusters int32 `json:"omittedClusters,omitempty"`
}

// FleetWork is one ManifestWork's verdicts.
type FleetWork struct {
	// Cluster is the managed cluster: the hub namespace of the work.
	Cluster string `json:"cluster"`
	Name    string `json:"name"`
	// AppConfig is namespace/name of the AppConfig ferry-hub delivers with the work (its labels
	// ferry.io/appconfig-namespace and -name); empty for a work ferry-hub did not make.
	AppConfig string `json:"appConfig,omitempty"`
	// Applied and Available are the work's own conditions about its generation; Unknown while the
	// agent has not reported on it.
	Applied   metav1.ConditionStatus `json:"applied"`
	Available metav1.ConditionStatus `json:"available"`
	// Health aggregates its manifests' health as the hub does (workreport.AggregateHealth); a manifest
	// of the spec the agent has not reported counts as Unknown.
	Health v1alpha2.Health `json:"health"`
	// Drifted counts the work's objects with a Drifted report for its generation (workreport.DriftOf).
	Drifted int32 `json:"drifted"`
	// DriftedAtLeast marks, in a StatusOnly view, a count of only the drifted objects the AppConfig's
	// status names (its latest few): there may be more.
	DriftedAtLeast bool `json:"driftedAtLeast,omitempty"`
	// Created is the work's creationTimestamp; absent in a StatusOnly view.
	Created *metav1.Time `json:"created,omitempty"`
}

// Fine: the work is applied, available and Healthy, as v1alpha2.Fine judges a cluster of an AppConfig.
func (w FleetWork) Fine() bool { return v1alpha2.Fine(w.Applied, w.Available, w.Health) }

// ForFleetWork is mw's line, its report judged by pkg/workreport as the hub judges it. It decodes no
// manifest: `get works` judges every work of a fleet with it.
func ForFleetWork(mw *workv1.ManifestWork) FleetWork {
	gen := mw.Generation
	created := mw.CreationTimestamp
	w := FleetWork{Cluster: mw.Namespace, Name: mw.Name, AppConfig: appConfigOf(mw),
		Applied:   workreport.WorkStatus(mw.Status.Conditions, workv1.WorkApplied, gen),
		Available: workreport.WorkStatus(mw.Status.Conditions, workv1.WorkAvailable, gen),
		Created:   &created}
	var buf [8]v1alpha2.Health
	healths := buf[:0]
	for _, m := range mw.Status.ResourceStatus.Manifests {
		healths = append(healths, workreport.ReadManifest(m.Conditions, gen).Health)
		if _, drifted := workreport.DriftOf(m.Conditions, gen); drifted {
			w.Drifted++
		}
	}
	// As `status work` shows it: a manifest without a report is not known to be healthy.
	for range len(mw.Spec.Workload.Manifests) - len(mw.Status.ResourceStatus.Manifests) {
		healths = append(healths, v1alpha2.HealthUnknown)
	}
	w.Health = workreport.AggregateHealth(healths)
	return w
}

// appConfigOf is namespace/name of the AppConfig mw delivers, "" when ferry-hub did not make it.
func appConfigOf(mw *workv1.ManifestWork) string {
	ns, name := mw.Labels[v1alpha2.LabelAppConfigNamespace], mw.Labels[v1alpha2.LabelAppConfigName]
	if name == "" {
		return ""
	}
	return namespacedName(ns, name)
}

// ForFleetWorksStatus is the StatusOnly view of the works of apps, the AppConfigs of namespace: a line
// per cluster each one's status names (ForAppConfigStatus), with the drifted objects its status.drift
// names on that cluster.
func ForFleetWorksStatus(namespace string, apps []*v1alpha2.ApplicationConfiguration) FleetWorks {
	v := FleetWorks{Works: []FleetWork{}, StatusOnly: true, Namespace: namespace}
	for _, app := range apps {
		a := ForAppConfigStatus(app)
		v.MoreClusters += a.MoreClusters
		v.OmittedClusters += a.OmittedClusters
		for _, c := range a.Clusters {
			w := FleetWork{Cluster: c.Cluster, Name: c.Name, AppConfig: namespacedName(app.Namespace, app.Name),
				Applied: c.Applied, Available: c.Available, Health: c.Health}
			if d := app.Status.Drift; d != nil {
				for _, o := range d.Latest {
					w.Drifted += int32(count(o.Cluster == c.Cluster))
				}
				w.DriftedAtLeast = int(d.Objects) > len(d.Latest)
			}
			v.Works = append(v.Works, w)
		}
	}
	slices.SortFunc(v.Works, func(a, b FleetWork) int {
		return cmp.Or(strings.Compare(a.Cluster, b.Cluster), strings.Compare(a.Name, b.Name))
	})
	return v
}

// FleetDrift is the objects changed on their clusters and put back, fleet-wide, the latest first:
// `kubectl ferry drift`.
type FleetDrift struct {
	Objects []FleetDriftedObject `json:"objects"`

	// StatusOnly marks a view read from the status.drift of the AppConfigs of Namespace, for a user who
	// may not list ManifestWorks: each names only its latest few objects; AppConfigs has each one's
	// counts of all of them.
	StatusOnly bool             `json:"statusOnly,omitempty"`
	Namespace  string           `json:"namespace,omitempty"`
	AppConfigs []AppConfigDrift `json:"appConfigs,omitempty"`
}

// FleetDriftedObject is one drifted object: the manifest's Drifted report for its work's generation,
// with the work and the AppConfig it is of. Its managers and fields are all the report names (an
// AppConfig's status lists fewer).
type FleetDriftedObject struct {
	v1alpha2.DriftedObject `json:",inline"`
	// AppConfig is namespace/name of the AppConfig, empty for a work ferry-hub did not make.
	AppConfig string `json:"appConfig,omitempty"`
	// Work is the ManifestWork's name, Ordinal the manifest's index in it; absent in a StatusOnly view.
	Work    string `json:"work,omitempty"`
	Ordinal int32  `json:"ordinal,omitempty"`
}

// AppConfigDrift is an AppConfig's status.drift counts, in a StatusOnly view: objects drifted on how
// many clusters, and how many of them the status names.
type AppConfigDrift struct {
	AppConfig string `json:"appConfig"`
	Clusters  int32  `json:"clusters"`
	Objects   int32  `json:"objects"`
	Listed    int    `json:"listed"`
}

// DriftedObjectsOf are mw's objects with a Drifted report for the work's generation (workreport.DriftOf).
// It allocates nothing for a work that never drifted.
func DriftedObjectsOf(mw *workv1.ManifestWork) []FleetDriftedObject {
	var out []FleetDriftedObject
	for _, m := range mw.Status.ResourceStatus.Manifests {
		d, ok := workreport.DriftOf(m.Conditions, mw.Generation)
		if !ok {
			continue
		}
		rm := m.ResourceMeta
		out = append(out, FleetDriftedObject{AppConfig: appConfigOf(mw), Work: mw.Name, Ordinal: rm.Ordinal,
			DriftedObject: v1alpha2.DriftedObject{Cluster: mw.Namespace, Kind: rm.Kind, Namespace: rm.Namespace, Name: rm.Name,
				Managers: d.Managers, Fields: d.Fields, MoreFields: int32(d.MoreFields), Count: int32(d.Count), Time: metav1.NewTime(d.Time)}})
	}
	return out
}

// ForFleetDrift is the view of objects, which it sorts: the latest changed first, then by cluster, work
// and manifest, as the hub orders an AppConfig's status.drift.latest.
func ForFleetDrift(objects []FleetDriftedObject) FleetDrift {
	if objects == nil {
		objects = []FleetDriftedObject{}
	}
	slices.SortFunc(objects, func(a, b FleetDriftedObject) int {
		return cmp.Or(b.Time.Compare(a.Time.Time), strings.Compare(a.Cluster, b.Cluster), strings.Compare(a.Work, b.Work),
			cmp.Compare(a.Ordinal, b.Ordinal))
	})
	return FleetDrift{Objects: objects}
}

// ForFleetDriftStatus is the StatusOnly view of the drift of apps, the AppConfigs of namespace: the
// objects each one's status.drift names (at most v1alpha2.MaxDriftedObjectsListed), and its counts.
func ForFleetDriftStatus(namespace string, apps []*v1alpha2.ApplicationConfiguration) FleetDrift {
	var objects []FleetDriftedObject
	var counts []AppConfigDrift
	for _, app := range apps {
		d := app.Status.Drift
		if d == nil {
			continue
		}
		key := namespacedName(app.Namespace, app.Name)
		counts = append(counts, AppConfigDrift{AppConfig: key, Clusters: d.Clusters, Objects: d.Objects, Listed: len(d.Latest)})
		for _, o := range d.Latest {
			objects = append(objects, FleetDriftedObject{DriftedObject: *o.DeepCopy(), AppConfig: key})
		}
	}
	v := ForFleetDrift(objects)
	v.StatusOnly, v.Namespace, v.AppConfigs = true, namespace, counts
	return v
}

// FleetStatusOnlyNote is what a StatusOnly fleet view says of itself under its table.
func FleetStatusOnlyNote(namespace string) string {
	return fmt.Sprintf("Read from the status of the AppConfigs in namespace %s: listing ManifestWorks in the cluster namespaces "+
		"(work.open-cluster-management.io) is not allowed to you.", namespace)
}

func (v FleetWorks) writeTable(w io.Writer) error {
	if len(v.Works) == 0 {
		fmt.Fprintln(w, "No ManifestWorks found.")
	} else {
		now := time.Now()
		tw := newTabWriter(w)
		row(tw, "CLUSTER", "NAME", "APP", "APPLIED", "AVAILABLE", "HEALTH", "DRIFTED", "AGE")
		for _, l := range v.Works {
			drifted := fmt.Sprint(l.Drifted)
			if l.DriftedAtLeast {
				drifted += "+"
			}
			age := "-"
			if l.Created != nil {
				age = duration.HumanDuration(now.Sub(l.Created.Time))
			}
			row(tw, l.Cluster, l.Name, dash(l.AppConfig), l.Applied, l.Available, l.Health, drifted, age)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if !v.StatusOnly {
		return nil
	}
	fmt.Fprintf(w, "\n%s\nEach status names at most %d of its clusters and %d that are not fine, and its %d latest drifted objects: "+
		"DRIFTED counts only those, and N+ says there are more.\n",
		FleetStatusOnlyNote(v.Namespace), v1alpha2.MaxClustersListed, v1alpha2.MaxClustersListed, v1alpha2.MaxDriftedObjectsListed)
	if v.MoreClusters > 0 {
		fmt.Fprintf(w, "(and %d more clusters delivered to, which the statuses do not name)\n", v.MoreClusters)
	}
	if v.OmittedClusters > 0 {
		fmt.Fprintf(w, "(%d clusters that are not fine are not listed in the statuses)\n", v.OmittedClusters)
	}
	return nil
}

func (v FleetDrift) writeTable(w io.Writer) error {
	if len(v.Objects) == 0 {
		fmt.Fprintln(w, "No drifted objects found.")
	} else {
		now := time.Now()
		tw := newTabWriter(w)
		row(tw, "CLUSTER", "APP", "KIND", "NAMESPACE/NAME", "CHANGED-BY", "FIELDS", "COUNT", "LAST")
		for _, o := range v.Objects {
			fields := strings.Join(o.Fields, ",")
			if o.MoreFields > 0 {
				fields += fmt.Sprintf("(+%d)", o.MoreFields)
			}
			row(tw, o.Cluster, dash(o.AppConfig), o.Kind, namespacedName(o.Namespace, o.Name), dash(strings.Join(o.Managers, ",")),
				dash(fields), o.Count, duration.HumanDuration(now.Sub(o.Time.Time)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if !v.StatusOnly {
		return nil
	}
	fmt.Fprintf(w, "\n%s\nEach status names only its %d latest drifted objects; all of them:\n",
		FleetStatusOnlyNote(v.Namespace), v1alpha2.MaxDriftedObjectsListed)
	for _, c := range v.AppConfigs {
		fmt.Fprintf(w, "  %s: %d objects on %d clusters, %d listed\n", c.AppConfig, c.Objects, c.Clusters, c.Listed)
	}
	return nil
}
