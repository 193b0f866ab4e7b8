package fleetsim

import (
	"cmp"
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
)

// FleetLabel marks the ManagedClusters RegisterClusters registers; Selector selects them.
const FleetLabel = "fleet.ferry.io/bench"

// Selector is the clusterSelector of an AppConfig placed on every cluster RegisterClusters registered.
func Selector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{FleetLabel: "true"}}
}

// ClusterOptions says which clusters RegisterClusters registers.
type ClusterOptions struct {
	// Count is how many clusters.
	Count int
	// Prefix starts every cluster's name; default "fleet-".
	Prefix string
	// Concurrency is how many clusters are registered at once; default 64. The API server, not the
	// client, should be what limits the pace.
	Concurrency int
	// ClusterSets, when given, are exclusive ManagedClusterSets (ExclusiveSet) the clusters are spread
	// over round-robin (SetOf): each is labelled ClusterSetLabel=<its set>. None: no cluster carries
	// the label.
	ClusterSets []string
	// Regions, when not 0, labels the clusters RegionLabel=region-<i mod Regions>, round-robin, and
	// gives each the ClusterClaim id.k8s.io=<its name> in its status: the facts overrides read.
	Regions int
}

// RegionLabel is the label of a cluster's region (ClusterOptions.Regions).
const RegionLabel = "region"

// RegionOf is the region of the i-th cluster of regions, "" for none.
func RegionOf(i, regions int) string {
	if regions == 0 {
		return ""
	}
	return fmt.Sprintf("region-%d", i%regions)
}

// ClusterName is the name of the i-th cluster (from 0): the prefix and i in five digits or more, so
// that names sort as the clusters are numbered.
func ClusterName(prefix string, i int) string {
	return fmt.Sprintf("%s%05d", cmp.Or(prefix, "fleet-"), i)
}

// RegisterClusters does on the hub cfg reaches what joining and accepting a cluster does in Open
// Cluster Management, for opts.Count clusters at once: each gets a namespace of its name (where its
// ManifestWorks live) and a ManagedCluster labelled FleetLabel=true (and with opts.ClusterSets its
// set's ClusterSetLabel) that the hub accepts. Objects that
// exist already are left as they are, so a second call registers only what is missing. It returns
// the clusters' names in order. Give it a FastConfig.
func RegisterClusters(ctx context.Context, cfg *rest.Config, opts ClusterOptions) ([]string, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("register clusters: %w", err)
	}
	clusters, err := clusterclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("register clusters: %w", err)
	}
	names := make([]string, opts.Count)
	for i := range names {
		names[i] = ClusterName(opts.Prefix, i)
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(cmp.Or(opts.Concurrency, 64))
	for i, name := range names {
		labels := map[string]string{FleetLabel: "true"}
		if set := SetOf(i, opts.ClusterSets); set != "" {
			labels[clusterv1beta2.ClusterSetLabel] = set
		}
		if region := RegionOf(i, opts.Regions); region != "" {
			labels[RegionLabel] = region
		}
		g.Go(func() error {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create namespace %s: %w", name, err)
			}
			mc := &clusterv1.ManagedCluster{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
				Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
			}
			created, err := clusters.ClusterV1().ManagedClusters().Create(ctx, mc, metav1.CreateOptions{})
			switch {
			case apierrors.IsAlreadyExists(err):
				return nil
			case err != nil:
				return fmt.Errorf("create ManagedCluster %s: %w", name, err)
			case opts.Regions == 0:
				return nil
			}
			// As a registration agent reports the claim.
			created.Status.ClusterClaims = []clusterv1.ManagedClusterClaim{{Name: "id.k8s.io", Value: name}}
			if _, err := clusters.ClusterV1().ManagedClusters().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("report the claims of ManagedCluster %s: %w", name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("register %d clusters: %w", opts.Count, err)
	}
	return names, nil
}
