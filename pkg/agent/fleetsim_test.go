package agent_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/internal/testing/fleetsim"
)

// bench-fleet's simulated agents report what a real agent reports: a work of a ready Deployment (with
// the well-known feedback the hub asks for its workloads) and a Service, applied by the agent on a
// spoke whose kwok nodes run the pods, has on the hub the status the simulator writes for it, but for
// the times. The simulator builds it with the agent's own status builder and health evaluator; this
// test pins the rest of what it assumes of the objects.
func TestSimulatedAgentsReportWhatTheAgentReports(t *testing.T) {
	f := startAgent(t)
	w := f.work("simulated", namespaceManifest, strings.Replace(deploymentWeb, "replicas: 1", "replicas: 2", 1),
		`{apiVersion: v1, kind: Service, metadata: {name: web, namespace: "{{ns}}"}, spec: {ports: [{port: 80}]}}`)
	w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{
		ResourceIdentifier: workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Namespace: f.cluster, Name: "web"},
		FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}},
	}}
	f.create(w)
	real := f.waitWork(w.Name, "healthy, replicas reported", func(w *workv1.ManifestWork) bool {
		return allHealthy(w) && feedbackValue(w, 1, "ReadyReplicas") == "2"
	})

	slim, err := fleetsim.WorkOf(real)
	if err != nil {
		t.Fatal(err)
	}
	simulated := fleetsim.Status(slim, fleetsim.Healthy, time.Now())
	untimed := func(s workv1.ManifestWorkStatus) workv1.ManifestWorkStatus {
		s = *s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastTransitionTime = metav1.Time{}
		}
		for i := range s.ResourceStatus.Manifests {
			for j := range s.ResourceStatus.Manifests[i].Conditions {
				s.ResourceStatus.Manifests[i].Conditions[j].LastTransitionTime = metav1.Time{}
			}
		}
		return s
	}
	if got, want := untimed(simulated), untimed(real.Status); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("the simulated status differs from the agent's:\nsimulated %+v\n    agent %+v", got, want)
	}
}
