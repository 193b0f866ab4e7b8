package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/pkg/apply"
)

// A ManifestWork's spec.executor names a ServiceAccount on the managed cluster: the work may do on the
// cluster no more than that ServiceAccount may. Two ways to hold it to that:
//
//   - ExecutorCheck (the default, as OCM's agent): before a manifest is applied, SubjectAccessReviews ask
//     whether the ServiceAccount may do what applying it takes, and for Roles, RoleBindings,
//     ClusterRoles and ClusterRoleBindings a server-side dry-run create as the ServiceAccount asks
//     whether it could grant what they grant. The agent then applies with its own rights.
//   - ExecutorImpersonate (beyond OCM): the work's manifests are applied, pruned and deleted as the
//     ServiceAccount itself, so the API server enforces RBAC and admission and its audit log names the
//     ServiceAccount.
//
// A manifest its executor may not apply is not applied (Applied False, AppliedManifestFailed, naming
// the ServiceAccount, the verbs and the object) and nothing is deleted for it; the rest of the work is
// applied. What is allowed is remembered until RBAC on the cluster changes; then the works that had a
// denial are looked at again at once, so a permission granted takes effect within moments.

// ExecutorMode says how a work's executor is held to its permissions.
type ExecutorMode string

const (
	ExecutorCheck       ExecutorMode = "check"
	ExecutorImpersonate ExecutorMode = "impersonate"
)

// executorRetry is how soon a work with a denied manifest is looked at again if no RBAC change brings
// it back first (a watch that missed an event).
const executorRetry = time.Minute

// executorDeniedError is a manifest its executor may not apply.
type executorDeniedError struct {
	executor   workv1.ManifestWorkSubjectServiceAccount
	verbs      []string
	resource   schema.GroupResource
	namespace  string
	name       string
	escalation error // set when the dry-run create found a permission escalation
	refusal    error // set when the API server refused a write made as the ServiceAccount
}

func (e *executorDeniedError) Error() string {
	sa := e.executor.Namespace + "/" + e.executor.Name
	where := e.name
	if e.namespace != "" {
		where = fmt.Sprintf("%s in namespace %s", e.name, e.namespace)
	}
	if e.refusal != nil {
		return fmt.Sprintf("not allowed: the work's executor, ServiceAccount %s, was refused %s %s: %v", sa, e.resource, where, e.refusal)
	}
	if e.escalation != nil {
		return fmt.Sprintf("not allowed: the work's executor, ServiceAccount %s, may not create %s %s: it would grant permissions the ServiceAccount does not have (%v)",
			sa, e.resource, where, e.escalation)
	}
	return fmt.Sprintf("not allowed: the work's executor, ServiceAccount %s, may not %s %s %s; grant it with a Role (or ClusterRole) and a binding, and the manifest is applied moments later",
		sa, strings.Join(e.verbs, ", "), e.resource, where)
}

func isExecutorDenied(err error) bool {
	var e *executorDeniedError
	return errors.As(err, &e)
}

// invalidExecutorError is an executor the agent cannot act as.
type invalidExecutorError struct{ reason string }

func (e *invalidExecutorError) Error() string { return "invalid executor: " + e.reason }

// executors holds works to their executors. Its methods are safe on a nil *executors (no executor is
// ever enforced).
type executors struct {
	mode ExecutorMode
	// fallback is the executor of works that name none (--default-executor); nil: such works apply
	// with the agent's rights.
	fallback *workv1.ManifestWorkSubjectServiceAccount
	spoke    *rest.Config
	kube     kubernetes.Interface
	mapper   meta.RESTMapper
	store    apply.RecordStore // the agent's own: records are its bookkeeping
	hint     apply.ExistenceHint
	requeue  func(work string, after time.Duration)

	mu        sync.Mutex
	decisions map[accessKey]bool
	denied    map[string]bool // works that had a manifest denied since RBAC last changed
	clients   map[workv1.ManifestWorkSubjectServiceAccount]*executorClients
	// rbacSynced are the RBAC watches' HasSynced, once started (watchRBAC); ctx bounds their life.
	rbacSynced []cache.InformerSynced
	ctx        context.Context
}

// accessKey is one question to the authorizer.
type accessKey struct {
	executor  workv1.ManifestWorkSubjectServiceAccount
	verb      string
	resource  schema.GroupVersionResource
	namespace string
	name      string
}

// executorClients apply and delete as one ServiceAccount (ExecutorImpersonate).
type executorClients struct {
	dynamic dynamic.Interface
	applier *apply.Applier
}

// executorOf returns the ServiceAccount a work applies as, nil when none, or why the work's executor
// cannot be used.
func (x *executors) executorOf(work *workv1.ManifestWork) (*workv1.ManifestWorkSubjectServiceAccount, error) {
	if work.Spec.Executor == nil {
		return x.fallback, nil
	}
	subject := work.Spec.Executor.Subject
	if subject.Type != workv1.ExecutorSubjectTypeServiceAccount {
		return nil, &invalidExecutorError{reason: fmt.Sprintf("subject type %q: only %s is supported", subject.Type, workv1.ExecutorSubjectTypeServiceAccount)}
	}
	if sa := subject.ServiceAccount; sa == nil || sa.Namespace == "" || sa.Name == "" {
		return nil, &invalidExecutorError{reason: "subject.serviceAccount needs a namespace and a name"}
	}
	return subject.ServiceAccount, nil
}

// serviceAccountUser is the user name the API server gives a ServiceAccount.
func serviceAccountUser(sa workv1.ManifestWorkSubjectServiceAccount) string {
	return "system:serviceaccount:" + sa.Namespace + ":" + sa.Name
}

func serviceAccountGroups(sa workv1.ManifestWorkSubjectServiceAccount) []string {
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.Namespace, "system:authenticated"}
}

// verbsFor is what applying a manifest under a strategy may do to its object. OCM's agent asks for
// get, create, update and patch whatever the strategy; Ferry asks only what the strategy can do, so
// that a ReadOnly work needs no write permission. delete is asked when the work owns the object (it
// deletes it when the manifest leaves the work or the work is deleted).
func verbsFor(strategy apply.StrategyType, owned bool) []string {
	switch strategy {
	case apply.ReadOnly:
		return []string{"get"}
	case apply.CreateOnly:
		if owned {
			return []string{"get", "create", "delete"}
		}
		return []string{"get", "create"}
	}
	if owned {
		return []string{"get", "create", "update", "patch", "delete"}
	}
	return []string{"get", "create", "update", "patch"}
}

// authorize checks, in ExecutorCheck mode, that the work's executor may apply obj (mapped to resource)
// under strategy; a nil error means it may, or that there is nothing to check.
func (x *executors) authorize(ctx context.Context, work *workv1.ManifestWork, resource schema.GroupVersionResource,
	namespace, name string, strategy apply.StrategyType, owned bool, obj *unstructured.Unstructured) error {
	if x == nil {
		return nil
	}
	sa, err := x.executorOf(work)
	if err != nil || sa == nil {
		return err
	}
	if err := x.watchRBAC(ctx); err != nil {
		return err
	}
	if x.mode == ExecutorImpersonate {
		return nil // the API server decides, when the manifest is applied as the ServiceAccount
	}
	var denied []string
	for _, verb := range verbsFor(strategy, owned) {
		allowed, err := x.allowed(ctx, accessKey{executor: *sa, verb: verb, resource: resource, namespace: namespace, name: name})
		if err != nil {
			return fmt.Errorf("ask whether the executor may %s %s: %w", verb, resource.GroupResource(), err)
		}
		if !allowed {
			denied = append(denied, verb)
		}
	}
	if len(denied) == 0 && strategy != apply.ReadOnly && grantsPermissions(resource) {
		err = x.checkEscalation(ctx, *sa, resource, namespace, obj)
	}
	if len(denied) > 0 || err != nil {
		if len(denied) > 0 || isExecutorDenied(err) {
			x.mu.Lock()
			x.denied[work.Name] = true
			x.mu.Unlock()
		}
		if len(denied) > 0 {
			return &executorDeniedError{executor: *sa, verbs: denied, resource: resource.GroupResource(), namespace: namespace, name: name}
		}
		return err
	}
	return nil
}

// allowed answers one question, from the cache or with a SubjectAccessReview.
func (x *executors) allowed(ctx context.Context, k accessKey) (bool, error) {
	x.mu.Lock()
	allowed, known := x.decisions[k]
	x.mu.Unlock()
	if known {
		return allowed, nil
	}
	review, err := x.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   serviceAccountUser(k.executor),
			Groups: serviceAccountGroups(k.executor),
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: k.verb, Group: k.resource.Group, Version: k.resource.Version, Resource: k.resource.Resource,
				Namespace: k.namespace, Name: k.name,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	if review.Status.Allowed {
		// Only what is allowed is remembered: a denial is asked again when the work is retried, so
		// that a grant the API server's authorizer has not seen yet when RBAC's watch tells the agent
		// is not taken for a denial until the next change.
		x.mu.Lock()
		x.decisions[k] = true
		x.mu.Unlock()
	}
	return review.Status.Allowed, nil
}

// grantsPermissions reports whether objects of the resource grant permissions: creating one is also
// subject to RBAC's escalation check, which no SubjectAccessReview asks.
func grantsPermissions(resource schema.GroupVersionResource) bool {
	if resource.Group != "rbac.authorization.k8s.io" {
		return false
	}
	switch resource.Resource {
	case "roles", "rolebindings", "clusterroles", "clusterrolebindings":
		return true
	}
	return false
}

// checkEscalation asks the API server, with a dry-run create as the ServiceAccount, whether it could
// grant what obj grants. An object that exists already answers AlreadyExists after RBAC's own checks,
// which counts as allowed, as in OCM's agent.
func (x *executors) checkEscalation(ctx context.Context, sa workv1.ManifestWorkSubjectServiceAccount, resource schema.GroupVersionResource, namespace string, obj *unstructured.Unstructured) error {
	clients, err := x.clientsFor(sa)
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = clients.dynamic.Resource(resource)
	if namespace != "" {
		ri = clients.dynamic.Resource(resource).Namespace(namespace)
	}
	_, err = ri.Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	switch {
	case err == nil || apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.IsForbidden(err):
		return &executorDeniedError{executor: sa, verbs: []string{"create"}, resource: resource.GroupResource(), namespace: namespace, name: obj.GetName(), escalation: err}
	}
	return fmt.Errorf("dry-run create as the executor: %w", err)
}

// clientsFor returns the clients that act as sa, built once.
func (x *executors) clientsFor(sa workv1.ManifestWorkSubjectServiceAccount) (*executorClients, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if c := x.clients[sa]; c != nil {
		return c, nil
	}
	cfg := rest.CopyConfig(x.spoke)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceAccountUser(sa), Groups: serviceAccountGroups(sa)}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client acting as ServiceAccount %s/%s: %w", sa.Namespace, sa.Name, err)
	}
	applier := apply.New(dyn, x.mapper)
	if x.store != nil {
		applier.WithRecordStore(x.store)
	}
	if x.hint != nil {
		applier.WithExistenceHint(x.hint)
	}
	c := &executorClients{dynamic: dyn, applier: applier}
	x.clients[sa] = c
	return c, nil
}

// applierFor returns what applies the work's manifests: as its executor in ExecutorImpersonate mode,
// else nil (the agent's own).
func (x *executors) applierFor(work *workv1.ManifestWork) (*apply.Applier, error) {
	clients, err := x.impersonating(work)
	if clients == nil || err != nil {
		return nil, err
	}
	return clients.applier, nil
}

// dynamicFor returns what removes the work's objects: as its executor in ExecutorImpersonate mode,
// else nil (the agent's own).
func (x *executors) dynamicFor(work *workv1.ManifestWork) (dynamic.Interface, error) {
	clients, err := x.impersonating(work)
	if clients == nil || err != nil {
		return nil, err
	}
	return clients.dynamic, nil
}

func (x *executors) impersonating(work *workv1.ManifestWork) (*executorClients, error) {
	if x == nil || x.mode != ExecutorImpersonate {
		return nil, nil
	}
	sa, err := x.executorOf(work)
	if err != nil || sa == nil {
		return nil, err
	}
	return x.clientsFor(*sa)
}

// watchRBAC starts, once, the watches that forget every cached decision when RBAC on the cluster
// changes and look again at the works that had a denial, and waits until they have listed what is
// there: from then on no change can slip between a decision and its watch. Metadata is enough: any
// change of a Role, a ClusterRole or a binding may change any decision.
func (x *executors) watchRBAC(ctx context.Context) error {
	x.mu.Lock()
	if x.rbacSynced == nil {
		client, err := metadata.NewForConfig(x.spoke)
		if err != nil {
			x.mu.Unlock()
			return fmt.Errorf("watch RBAC: %w", err)
		}
		factory := metadatainformer.NewSharedInformerFactory(client, 0)
		handler := cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(_ any, initial bool) {
				if !initial {
					x.rbacChanged()
				}
			},
			UpdateFunc: func(old, cur any) {
				o, ok1 := old.(metav1.Object)
				c, ok2 := cur.(metav1.Object)
				if ok1 && ok2 && o.GetResourceVersion() == c.GetResourceVersion() {
					return // a resync
				}
				x.rbacChanged()
			},
			DeleteFunc: func(any) { x.rbacChanged() },
		}
		for _, resource := range []string{"roles", "rolebindings", "clusterroles", "clusterrolebindings"} {
			inf := factory.ForResource(schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: resource}).Informer()
			reg, _ := inf.AddEventHandler(handler)
			x.rbacSynced = append(x.rbacSynced, reg.HasSynced)
		}
		// The watches live as long as the agent's controllers (x.ctx), not as this request.
		factory.Start(x.ctx.Done())
	}
	synced := x.rbacSynced
	x.mu.Unlock()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("watch RBAC: %w", ctx.Err())
	}
	return nil
}

// rbacChanged forgets every decision and looks again at the works that had a denial: at once, and
// once more a moment later in case the API server's authorizer had not seen the change yet.
func (x *executors) rbacChanged() {
	x.mu.Lock()
	clear(x.decisions)
	works := x.denied
	x.denied = map[string]bool{}
	x.mu.Unlock()
	for work := range works {
		x.requeue(work, 0)
		x.requeue(work, rbacSettle)
	}
}

// rbacSettle is how long after an RBAC change a denied work is tried a second time.
const rbacSettle = 2 * time.Second

// refused turns an API server's Forbidden of a write made as the work's executor (ExecutorImpersonate)
// into the denial a manifest reports, and notes the work to look at again when RBAC changes.
func (x *executors) refused(work *workv1.ManifestWork, err error, resource schema.GroupVersionResource, namespace, name string) error {
	if x == nil || x.mode != ExecutorImpersonate || !apierrors.IsForbidden(err) {
		return err
	}
	sa, _ := x.executorOf(work)
	if sa == nil {
		return err
	}
	x.mu.Lock()
	x.denied[work.Name] = true
	x.mu.Unlock()
	return &executorDeniedError{executor: *sa, resource: resource.GroupResource(), namespace: namespace, name: name, refusal: err}
}

func newExecutors(ctx context.Context, cfg Config, mapper meta.RESTMapper, store apply.RecordStore, requeue func(string, time.Duration)) (*executors, error) {
	mode := cfg.ExecutorMode
	if mode == "" {
		mode = ExecutorCheck
	}
	return &executors{
		ctx: ctx, mode: mode, fallback: cfg.DefaultExecutor, spoke: cfg.Clients.Spoke, kube: cfg.Clients.SpokeKube, mapper: mapper, store: store, requeue: requeue,
		decisions: map[accessKey]bool{}, denied: map[string]bool{}, clients: map[workv1.ManifestWorkSubjectServiceAccount]*executorClients{},
	}, nil
}
