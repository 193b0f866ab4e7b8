package process

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	clusterclientset "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/ferry-mc/ferry/pkg/registration"
)

// Telling the hub what the cluster claims.
//
// OCM's registration agent copies a managed cluster's ClusterClaims (cluster-scoped objects of
// cluster.open-cluster-management.io/v1alpha1 on the spoke: its ID, region, platform...) into its
// ManagedCluster's status.clusterClaims on the hub, where OCM's placements and Ferry's overrides read
// them. A cluster `ferry-hub clusters add` registered has no registration agent: there, and only
// there, the leading ferry-agent copies them, by the registration agent's rules (claimsToReport), with
// the right on its own ManagedCluster's status that `clusters add` grants. A cluster registered
// otherwise is its registration agent's to report, and ferry-agent leaves its status alone.

// claimSpokeOnlyLabel marks a ClusterClaim the cluster keeps to itself, as OCM's registration agent
// reads it.
const claimSpokeOnlyLabel = "open-cluster-management.io/spoke-only"

// DefaultMaxCustomClusterClaims is OCM's registration agent's --max-custom-cluster-claims default.
const DefaultMaxCustomClusterClaims = 20

// claimsToReport are the claims a ManagedCluster's status holds for the spoke's claims: every claim but
// the spoke-only ones, the reserved names first (ReservedClusterClaimNames), then the others, each part
// by name, the others cut at maxCustom.
func claimsToReport(claims []*clusterv1alpha1.ClusterClaim, maxCustom int) []clusterv1.ManagedClusterClaim {
	var reserved, custom []clusterv1.ManagedClusterClaim
	for _, c := range claims {
		if _, spokeOnly := c.Labels[claimSpokeOnlyLabel]; spokeOnly {
			continue
		}
		claim := clusterv1.ManagedClusterClaim{Name: c.Name, Value: c.Spec.Value}
		if slices.Contains(clusterv1alpha1.ReservedClusterClaimNames[:], c.Name) {
			reserved = append(reserved, claim)
		} else {
			custom = append(custom, claim)
		}
	}
	byName := func(a, b clusterv1.ManagedClusterClaim) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(reserved, byName)
	slices.SortFunc(custom, byName)
	return append(reserved, custom[:min(len(custom), max(maxCustom, 0))]...)
}

// hubClaimsReporter copies the spoke's ClusterClaims into the cluster's ManagedCluster on the hub.
type hubClaimsReporter struct {
	cluster   string
	hub       clusterclientset.Interface
	spoke     clusterclientset.Interface
	maxCustom int
	log       logr.Logger
}

func newHubClaimsReporter(o *Options, hub, spoke *rest.Config, log logr.Logger) (*hubClaimsReporter, error) {
	hubClusters, err := clusterclientset.NewForConfig(hub)
	if err != nil {
		return nil, fmt.Errorf("hub cluster client: %w", err)
	}
	spokeClaims, err := clusterclientset.NewForConfig(spoke)
	if err != nil {
		return nil, fmt.Errorf("spoke ClusterClaim client: %w", err)
	}
	return &hubClaimsReporter{cluster: o.SpokeClusterName, hub: hubClusters, spoke: spokeClaims, maxCustom: o.MaxCustomClusterClaims, log: log}, nil
}

// run reports the claims, again at every change of them, until ctx is done. It returns at once for a
// cluster Ferry did not register, and tries again now and then while the hub cannot say.
func (r *hubClaimsReporter) run(ctx context.Context) {
	var reported []clusterv1.ManagedClusterClaim
	for {
		mc, err := r.hub.ClusterV1().ManagedClusters().Get(ctx, r.cluster, metav1.GetOptions{})
		if (err == nil && mc.Labels[registration.RegisteredByLabel] != registration.RegisteredByFerry) || apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
			// Registered otherwise (or the agent has no right on it): not ours to report.
			r.log.V(1).Info("not reporting ClusterClaims: the cluster was not registered by ferry-hub clusters add, its registration agent reports them")
			return
		}
		if err == nil {
			reported = mc.Status.ClusterClaims
			break
		}
		if ctx.Err() != nil {
			return
		}
		r.log.Info("not reporting ClusterClaims yet: cannot read the cluster's ManagedCluster", "error", err.Error(), "retryIn", unregisteredRetry)
		select {
		case <-ctx.Done():
			return
		case <-time.After(unregisteredRetry):
		}
	}

	changed := make(chan struct{}, 1)
	signal := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	lw := cache.NewListWatchFromClient(r.spoke.ClusterV1alpha1().RESTClient(), "clusterclaims", "", fields.Everything())
	informer := cache.NewSharedIndexInformer(lw, &clusterv1alpha1.ClusterClaim{}, 0, cache.Indexers{})
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { signal() }, UpdateFunc: func(any, any) { signal() }, DeleteFunc: func(any) { signal() },
	}); err != nil {
		r.log.Error(err, "not reporting ClusterClaims")
		return
	}
	go informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return
	}
	signal()
	retry := time.Second
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		var claims []*clusterv1alpha1.ClusterClaim
		for _, o := range informer.GetStore().List() {
			claims = append(claims, o.(*clusterv1alpha1.ClusterClaim))
		}
		want := claimsToReport(claims, r.maxCustom)
		if equality.Semantic.DeepEqual(want, reported) || (len(want) == 0 && len(reported) == 0) {
			continue // steady state: no write
		}
		if err := r.report(ctx, want); err != nil {
			r.log.Info("could not report ClusterClaims to the hub; retrying", "error", err.Error(), "retryIn", retry)
			time.AfterFunc(retry, signal)
			retry = min(2*retry, unregisteredRetry)
			continue
		}
		r.log.Info("reported ClusterClaims to the hub", "claims", len(want))
		reported, retry = want, time.Second
	}
}

// report writes claims into the ManagedCluster's status: a merge patch of that field alone, which no
// other writer of the status (ferry-hub's conditions) touches.
func (r *hubClaimsReporter) report(ctx context.Context, claims []clusterv1.ManagedClusterClaim) error {
	if claims == nil {
		claims = []clusterv1.ManagedClusterClaim{}
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"clusterClaims": claims}})
	if err != nil {
		return err
	}
	_, err = r.hub.ClusterV1().ManagedClusters().Patch(ctx, r.cluster, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%w (ferry-hub clusters add grants the agent patch on its ManagedCluster's status: add the cluster again with this ferry-hub)", err)
	}
	return err
}
