package process

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/ferry-mc/ferry/pkg/registration"
)

// Telling the hub the agent is there.
//
// A cluster registered with `ferry-hub clusters add` has the Lease registration.LeaseName in its
// namespace on the hub; the leading agent renews it every lease duration once its caches are in sync,
// and ferry-hub turns it into the ManagedCluster's Joined and Available conditions. A cluster joined
// otherwise (clusteradm) has no such Lease, or the agent may not touch it: the agent says so once and
// looks again now and then, never failing for it — OCM's registration agent reports that cluster.

// unregisteredRetry is how soon an agent without a Lease to renew looks again: a cluster registered
// while its agent runs is Available within this.
const unregisteredRetry = time.Minute

// hubLeaseRenewer renews the agent's Lease on the hub.
type hubLeaseRenewer struct {
	leases coordinationclient.LeaseInterface
	holder string
	log    logr.Logger
	now    func() time.Time
}

// run renews the Lease until ctx is done.
func (r *hubLeaseRenewer) run(ctx context.Context) {
	lastProblem, unconfirmed := "", ""
	for {
		next, problem := r.renew(ctx)
		// A hub API server that has just started refuses requests until its RBAC caches are filled:
		// a problem is reported once it is seen twice in a row, a few seconds apart.
		if problem != "" && problem != lastProblem && problem != unconfirmed {
			unconfirmed, next = problem, min(next, 5*time.Second)
			problem = lastProblem
		} else if problem == "" || problem == lastProblem {
			unconfirmed = ""
		}
		switch {
		case ctx.Err() != nil:
			return
		case problem != lastProblem && problem != "":
			r.log.Info("not reporting this cluster's availability to the hub", "reason", problem)
		case problem != lastProblem:
			r.log.Info("renewing this cluster's Lease on the hub", "lease", registration.LeaseName, "every", next)
		}
		lastProblem = problem
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// renew renews the Lease once and returns when to renew next, and a problem a person should know of
// (empty when there is none, or when the error is one of the hub's outages, which the agent's outage
// log reports and the next renewal outlives).
func (r *hubLeaseRenewer) renew(ctx context.Context) (next time.Duration, problem string) {
	lease, err := r.leases.Get(ctx, registration.LeaseName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return unregisteredRetry, fmt.Sprintf("the hub has no Lease %s in this cluster's namespace: the cluster was not registered with "+
			"`ferry-hub clusters add` (on a cluster joined with clusteradm, OCM's registration agent reports availability)", registration.LeaseName)
	case apierrors.IsForbidden(err):
		return unregisteredRetry, fmt.Sprintf("the hub credential may not read the Lease %s of this cluster's namespace "+
			"(a credential not made by `ferry-hub clusters add`, or a hub ClusterRole older than this agent)", registration.LeaseName)
	case err != nil:
		return min(registration.LeaseDuration(nil), 5*time.Second), ""
	}
	period := registration.LeaseDuration(lease)
	now := metav1.NewMicroTime(r.now())
	lease.Spec.RenewTime, lease.Spec.HolderIdentity = &now, &r.holder
	if _, err := r.leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsForbidden(err) {
			return unregisteredRetry, fmt.Sprintf("the hub credential may read but not renew the Lease %s of this cluster's namespace "+
				"(a hub ClusterRole older than this agent: run `ferry-hub clusters add` again)", registration.LeaseName)
		}
		// A conflict (someone touched it in between) or an outage: try again soon, well within the
		// hub's grace.
		return min(period, 5*time.Second), ""
	}
	return period, ""
}
