package agent_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/agent"
)

// Issue 8: the same ConfigMap named by the manifests of two works. Works that want the same content
// share it (both own it, neither writes again); works that want different content must not take turns
// overwriting it forever, each write waking the other work up through the watch of its objects: the
// work whose AppliedManifestWork owns the object first keeps it, and the later one reports
// ObjectOwnedByAnotherWork, naming the first, and writes nothing.
func TestBadInputSameObjectInTwoWorks(t *testing.T) {
	f := startAgent(t)
	f.createOnSpoke()

	t.Run("identical manifests share the object", func(t *testing.T) {
		cm := `{apiVersion: v1, kind: ConfigMap, metadata: {name: shared, namespace: "{{ns}}"}, data: {k: same}}`
		f.create(f.work("shared-1", cm))
		f.create(f.work("shared-2", cm))
		f.waitWork("shared-1", "applied", allApplied)
		f.waitWork("shared-2", "applied", allApplied)
		if owners := workOwners(f, "shared"); len(owners) != 2 {
			t.Errorf("owners of the shared ConfigMap = %v, want the AppliedManifestWorks of both works", owners)
		}
		if n, seen := configMapWrites(t, f, "shared", 3*time.Second); n != 0 {
			t.Errorf("the shared ConfigMap was written %d times in 3s once both works were applied (data seen: %v), want 0", n, seen)
		}
	})

	t.Run("different manifests: the first work keeps the object", func(t *testing.T) {
		f.create(f.work("contested-first", `{apiVersion: v1, kind: ConfigMap, metadata: {name: contested, namespace: "{{ns}}"}, data: {k: first}}`))
		f.waitWork("contested-first", "applied", allApplied)
		f.create(f.work("contested-second", `{apiVersion: v1, kind: ConfigMap, metadata: {name: contested, namespace: "{{ns}}"}, data: {k: second}}`))
		second := f.waitWork("contested-second", "reported", func(w *workv1.ManifestWork) bool {
			c := manifestCondition(w, 0, workv1.ManifestApplied)
			return c != nil && c.ObservedGeneration == w.Generation
		})

		// The measure of a fight: writes to the object once both works have reported.
		if n, seen := configMapWrites(t, f, "contested", 5*time.Second); n != 0 {
			t.Errorf("the works fight over the ConfigMap: %d writes in 5s once both reported, data seen: %v; want none", n, seen)
		}
		c := manifestCondition(second, 0, workv1.ManifestApplied)
		if c.Status != metav1.ConditionFalse || c.Reason != agent.ReasonObjectOwnedByAnotherWork || !strings.Contains(c.Message, `"contested-first"`) {
			t.Errorf("second work: Applied = %s %s %q, want False %s naming contested-first", c.Status, c.Reason, c.Message, agent.ReasonObjectOwnedByAnotherWork)
		}
		if m := manifestStatus(second, 0); m.ResourceMeta.Resource != "configmaps" || m.ResourceMeta.Name != "contested" {
			t.Errorf("second work: resourceMeta = %+v, want the configmap it names", m.ResourceMeta)
		}
		if cm, ok := spokeConfigMap(t, f, "contested"); !ok || cm.Data["k"] != "first" {
			t.Errorf("contested ConfigMap = %v, want the first work's data", cm)
		}
		if owners := workOwners(f, "contested"); len(owners) != 1 || !strings.HasSuffix(owners[0], "-contested-first") {
			t.Errorf("owners of the contested ConfigMap = %v, want the first work's AppliedManifestWork alone", owners)
		}
		f.waitWork("contested-first", "still applied", allApplied)

		// Once the first work lets go of the object, the second one applies it: nothing is left
		// half-done.
		if err := f.hub.WorkV1().ManifestWorks(f.cluster).Delete(t.Context(), "contested-first", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		pollUntil(t, "the second work takes the object over", func(ctx context.Context) (bool, error) {
			w, err := f.hub.WorkV1().ManifestWorks(f.cluster).Get(ctx, "contested-second", metav1.GetOptions{})
			if err != nil || !allApplied(w) {
				return false, nil
			}
			cm, err := f.kube.CoreV1().ConfigMaps(f.cluster).Get(ctx, "contested", metav1.GetOptions{})
			return err == nil && cm.Data["k"] == "second", nil
		})
	})
}

// Issue 8: the same manifest twice in one work applies once and is reported at both ordinals; dropping
// one copy does not delete the object the other copy still names.
func TestBadInputSameManifestTwiceInOneWork(t *testing.T) {
	f := startAgent(t)
	w := f.create(f.work("twice", namespaceManifest, configMapA, configMapA))
	f.waitWork(w.Name, "applied", allApplied)
	before, ok := spokeConfigMap(t, f, "a")
	if !ok {
		t.Fatal("configmap a was not applied")
	}
	if n, seen := configMapWrites(t, f, "a", 2*time.Second); n != 0 {
		t.Errorf("configmap a was written %d times in 2s after the work was applied (data seen: %v), want 0", n, seen)
	}

	f.update(w.Name, func(w *workv1.ManifestWork) { w.Spec.Workload.Manifests = w.Spec.Workload.Manifests[:2] })
	f.waitWork(w.Name, "applied with one copy", func(w *workv1.ManifestWork) bool {
		return allApplied(w) && len(w.Status.ResourceStatus.Manifests) == 2
	})
	after, ok := spokeConfigMap(t, f, "a")
	if !ok || after.UID != before.UID {
		t.Errorf("configmap a after dropping one of its two manifests: %v, want the same object (uid %s)", after, before.UID)
	}
}

// workOwners lists the AppliedManifestWorks among the owners of a ConfigMap of the test's namespace.
func workOwners(f *agentFixture, name string) []string {
	f.t.Helper()
	var out []string
	for _, ref := range f.liveConfigMap(name).OwnerReferences {
		if ref.Kind == "AppliedManifestWork" {
			out = append(out, ref.Name)
		}
	}
	return out
}

// configMapWrites watches a ConfigMap of the test's namespace for the window and returns how often it
// was written and the data it held. It is the one wait of a fixed length in these tests: it asserts
// that nothing keeps happening.
func configMapWrites(t *testing.T, f *agentFixture, name string, window time.Duration) (int, []string) {
	t.Helper()
	current, ok := spokeConfigMap(t, f, name)
	if !ok {
		t.Fatalf("configmap %s is not on the spoke", name)
	}
	ctx, cancel := context.WithTimeout(t.Context(), window)
	defer cancel()
	w, err := f.kube.CoreV1().ConfigMaps(f.cluster).Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
		ResourceVersion: current.ResourceVersion,
	})
	if err != nil {
		t.Fatalf("watch configmap %s: %v", name, err)
	}
	defer w.Stop()
	writes, seen := 0, []string{fmt.Sprint(current.Data)}
	for {
		select {
		case <-ctx.Done():
			return writes, seen
		case ev, open := <-w.ResultChan():
			if !open {
				return writes, seen
			}
			if ev.Type == watch.Modified || ev.Type == watch.Deleted || ev.Type == watch.Added {
				writes++
				if cm, ok := ev.Object.(*corev1.ConfigMap); ok {
					if d := fmt.Sprint(cm.Data); !slices.Contains(seen, d) {
						seen = append(seen, d)
					}
				}
			}
		}
	}
}

// Issue 8: one work naming the same object twice with different content. Applying both would overwrite
// the object twice a round, each write waking the work up again: the earlier manifest applies, the
// later one fails alone, naming the earlier one, and the object comes to rest.
func TestBadInputOneObjectTwiceWithDifferentContentInOneWork(t *testing.T) {
	f := startAgent(t)
	w := f.create(f.work("twice-different", namespaceManifest, configMapA, f.replace(configMapA, `k: "1"`, `k: "other"`)))
	got := f.waitWork(w.Name, "reported", func(w *workv1.ManifestWork) bool {
		c := manifestCondition(w, 2, workv1.ManifestApplied)
		return c != nil && c.ObservedGeneration == w.Generation
	})
	if n, seen := configMapWrites(t, f, "a", 3*time.Second); n != 0 {
		t.Errorf("configmap a was written %d times in 3s after the work reported (data seen: %v), want 0", n, seen)
	}
	if !hasCondition(got, 1, workv1.ManifestApplied, metav1.ConditionTrue) {
		t.Errorf("manifest 1: Applied = %+v, want True", manifestCondition(got, 1, workv1.ManifestApplied))
	}
	c := manifestCondition(got, 2, workv1.ManifestApplied)
	if c.Status != metav1.ConditionFalse || c.Reason != agent.ReasonAppliedManifestFailed || !strings.Contains(c.Message, "as manifest 1 does") {
		t.Errorf("manifest 2: Applied = %s %s %q, want False %s naming manifest 1", c.Status, c.Reason, c.Message, agent.ReasonAppliedManifestFailed)
	}
	if cm, ok := spokeConfigMap(t, f, "a"); !ok || cm.Data["k"] != "1" {
		t.Errorf("configmap a = %v, want manifest 1's data", cm)
	}
}
