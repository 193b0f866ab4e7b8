package registration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/deploy"
)

// AddOptions says what cluster Add registers and how its agent reaches the hub.
type AddOptions struct {
	// Name is the cluster's name: its ManagedCluster and its namespace on the hub.
	Name string
	// HubServer is the hub's URL as the cluster's agent reaches it; empty: the URL of the hub
	// configuration Add is given.
	HubServer string
	// HubCA is the PEM bundle the agent verifies the hub with; empty: that of the hub configuration
	// Add is given, else the hub's own root CA (the token Secret's ca.crt).
	HubCA []byte
	// LeaseDurationSeconds is how often the agent renews its Lease; zero: DefaultLeaseDurationSeconds.
	// The cluster turns Available Unknown after LeaseGraceTimes of it without a renewal.
	LeaseDurationSeconds int32
	// Labels are set on the ManagedCluster, for placements that select clusters by label.
	Labels map[string]string
	// ClusterSet is the ManagedClusterSet the cluster joins (its label
	// cluster.open-cluster-management.io/clusterset), made if missing; empty: DefaultClusterSet for a
	// new cluster, and an existing cluster keeps its set.
	ClusterSet string
	// TokenTimeout bounds the wait for the hub's token controller to fill the token Secret; zero: 30s.
	TokenTimeout time.Duration
}

// Add registers a cluster with the hub hub reaches, with the rights of a hub administrator, and
// returns its agent's hub credential. It is idempotent: run again, it keeps what exists (updating
// the ManagedCluster's labels and the lease duration) and returns the same credential. It refuses a
// ManagedCluster that something else registered.
func Add(ctx context.Context, hub *rest.Config, o AddOptions) (*Credential, error) {
	if o.Name == "" {
		return nil, errors.New("a cluster name is required")
	}
	if o.LeaseDurationSeconds == 0 {
		o.LeaseDurationSeconds = DefaultLeaseDurationSeconds
	}
	if o.LeaseDurationSeconds < 1 {
		return nil, fmt.Errorf("lease duration %ds: want at least 1s", o.LeaseDurationSeconds)
	}
	kube, err := kubernetes.NewForConfig(hub)
	if err != nil {
		return nil, fmt.Errorf("hub client: %w", err)
	}
	clusters, err := clusterclient.NewForConfig(hub)
	if err != nil {
		return nil, fmt.Errorf("hub client: %w", err)
	}
	r := &registrar{kube: kube, clusters: clusters, o: o}
	for _, step := range []func(context.Context) error{
		r.ensureClusterRole, r.ensureClusterSet, r.ensureManagedCluster, r.ensureNamespace, r.ensureAgentIdentity, r.ensureClusterStatusRole, r.ensureLease,
	} {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	token, rootCA, err := r.waitForToken(ctx)
	if err != nil {
		return nil, err
	}
	server, ca := o.HubServer, o.HubCA
	if server == "" {
		server = hub.Host
	}
	if len(ca) == 0 {
		ca, err = caOf(hub)
		if err != nil {
			return nil, err
		}
	}
	if len(ca) == 0 {
		ca = rootCA
	}
	kubeconfig, err := renderKubeconfig(server, ca, token)
	if err != nil {
		return nil, err
	}
	return &Credential{ClusterName: o.Name, ClusterSet: r.o.ClusterSet, Kubeconfig: kubeconfig}, nil
}

// registrar holds the clients and options of one Add.
type registrar struct {
	kube     kubernetes.Interface
	clusters clusterclient.Interface
	o        AddOptions
}

func ferryLabels() map[string]string { return map[string]string{RegisteredByLabel: RegisteredByFerry} }

// ensureClusterRole makes the hub's agent ClusterRole the one this Ferry ships, so the binding below
// never names a role the hub lacks or grants less than this version's agent needs.
func (r *registrar) ensureClusterRole(ctx context.Context) error {
	want := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(deploy.AgentHubClusterRole, want); err != nil {
		return fmt.Errorf("the agent's hub ClusterRole shipped with ferry-hub: %w", err)
	}
	roles := r.kube.RbacV1().ClusterRoles()
	have, err := roles.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := roles.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create ClusterRole %s: %w", want.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get ClusterRole %s: %w", want.Name, err)
	case equality.Semantic.DeepEqual(have.Rules, want.Rules):
		return nil
	}
	have.Rules = want.Rules
	if _, err := roles.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update ClusterRole %s to the rules this ferry-hub ships: %w", want.Name, err)
	}
	return nil
}

// ensureClusterSet makes the ManagedClusterSet the cluster joins, of OCM's exclusive label, when it is
// missing, and decides which set that is: the one asked for, else the set a registered cluster is in
// already, else DefaultClusterSet.
func (r *registrar) ensureClusterSet(ctx context.Context) error {
	if r.o.ClusterSet == "" {
		have, err := r.clusters.ClusterV1().ManagedClusters().Get(ctx, r.o.Name, metav1.GetOptions{})
		switch {
		case err == nil && have.Labels[clusterv1beta2.ClusterSetLabel] != "":
			r.o.ClusterSet = have.Labels[clusterv1beta2.ClusterSetLabel] // an existing cluster keeps its set
		case err != nil && !apierrors.IsNotFound(err):
			return fmt.Errorf("get ManagedCluster %s: %w", r.o.Name, err)
		default:
			r.o.ClusterSet = DefaultClusterSet
		}
	}
	set := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: r.o.ClusterSet},
		Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.ExclusiveClusterSetLabel}}}
	if _, err := r.clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, set, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ManagedClusterSet %s: %w", set.Name, err)
	}
	return nil
}

// clusterLabels are the labels Add gives the ManagedCluster: those asked for, Ferry's, and the set it
// joins.
func (r *registrar) clusterLabels() map[string]string {
	labels := mergeLabels(r.o.Labels, ferryLabels())
	if r.o.ClusterSet != "" {
		labels[clusterv1beta2.ClusterSetLabel] = r.o.ClusterSet
	}
	return labels
}

func (r *registrar) ensureManagedCluster(ctx context.Context) error {
	mcs := r.clusters.ClusterV1().ManagedClusters()
	have, err := mcs.Get(ctx, r.o.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		mc := &clusterv1.ManagedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: r.o.Name, Labels: r.clusterLabels()},
			Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true, LeaseDurationSeconds: r.o.LeaseDurationSeconds},
		}
		if _, err := mcs.Create(ctx, mc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create ManagedCluster %s: %w", r.o.Name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get ManagedCluster %s: %w", r.o.Name, err)
	}
	if err := ownedByFerry(have); err != nil {
		return err
	}
	labels := mergeLabels(have.Labels, r.clusterLabels())
	if equality.Semantic.DeepEqual(labels, have.Labels) && have.Spec.HubAcceptsClient && have.Spec.LeaseDurationSeconds == r.o.LeaseDurationSeconds {
		return nil
	}
	have.Labels, have.Spec.HubAcceptsClient, have.Spec.LeaseDurationSeconds = labels, true, r.o.LeaseDurationSeconds
	if _, err := mcs.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update ManagedCluster %s: %w", r.o.Name, err)
	}
	return nil
}

// ownedByFerry refuses a ManagedCluster that OCM's registration (or anyone but Add) made: its
// credential, lease and conditions are theirs.
func ownedByFerry(mc *clusterv1.ManagedCluster) error {
	if mc.Labels[RegisteredByLabel] == RegisteredByFerry {
		return nil
	}
	return fmt.Errorf("ManagedCluster %s exists and was not registered by ferry-hub (no label %s=%s): "+
		"it belongs to whoever joined it (e.g. `clusteradm join`), whose agent already has a hub-kubeconfig-secret; "+
		"run ferry-agent with that (deploy/agent/clusteradm) or choose another name", mc.Name, RegisteredByLabel, RegisteredByFerry)
}

func (r *registrar) ensureNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.o.Name, Labels: ferryLabels()}}
	if _, err := r.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", r.o.Name, err)
	}
	return nil
}

// ensureAgentIdentity makes the agent's ServiceAccount, binds it to the agent ClusterRole in the
// cluster's namespace only, and asks for its long-lived token: a token Secret, as `argocd cluster add`
// does, because a bound token would expire and nothing on a cluster without OCM renews it. Deleting
// the ServiceAccount (Remove) revokes the token at once.
func (r *registrar) ensureAgentIdentity(ctx context.Context) error {
	ns := r.o.Name
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: AgentServiceAccount, Namespace: ns, Labels: ferryLabels()}}
	if _, err := r.kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ServiceAccount %s/%s: %w", ns, sa.Name, err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: AgentServiceAccount, Namespace: ns, Labels: ferryLabels()},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: AgentClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: AgentServiceAccount, Namespace: ns}},
	}
	if _, err := r.kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("bind ClusterRole %s in namespace %s: %w", AgentClusterRole, ns, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: AgentServiceAccount + "-token", Namespace: ns, Labels: ferryLabels(),
			Annotations: map[string]string{corev1.ServiceAccountNameKey: AgentServiceAccount}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	if _, err := r.kube.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create token Secret %s/%s: %w", ns, secret.Name, err)
	}
	return nil
}

// ensureClusterStatusRole lets the agent read its ManagedCluster and patch its status, where it reports
// the cluster's ClusterClaims, as OCM's registration agent may: on that ManagedCluster alone.
func (r *registrar) ensureClusterStatusRole(ctx context.Context) error {
	name, cluster := AgentClusterStatusRole(r.o.Name), r.o.Name
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: ferryLabels()},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{clusterv1.GroupName}, Resources: []string{"managedclusters"}, ResourceNames: []string{cluster}, Verbs: []string{"get"}},
			{APIGroups: []string{clusterv1.GroupName}, Resources: []string{"managedclusters/status"}, ResourceNames: []string{cluster}, Verbs: []string{"patch"}},
		},
	}
	if _, err := r.kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRole %s: %w", name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: ferryLabels()},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: AgentServiceAccount, Namespace: cluster}},
	}
	if _, err := r.kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRoleBinding %s: %w", name, err)
	}
	return nil
}

// ensureLease makes the Lease the agent renews, never renewed yet: the cluster is not Joined until
// its agent renews it.
func (r *registrar) ensureLease(ctx context.Context) error {
	leases := r.kube.CoordinationV1().Leases(r.o.Name)
	have, err := leases.Get(ctx, LeaseName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: LeaseName, Namespace: r.o.Name, Labels: ferryLabels()},
			Spec:       coordinationv1.LeaseSpec{LeaseDurationSeconds: &r.o.LeaseDurationSeconds},
		}
		if _, err := leases.Create(ctx, lease, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create Lease %s/%s: %w", r.o.Name, LeaseName, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get Lease %s/%s: %w", r.o.Name, LeaseName, err)
	}
	if have.Spec.LeaseDurationSeconds != nil && *have.Spec.LeaseDurationSeconds == r.o.LeaseDurationSeconds && have.Labels[RegisteredByLabel] == RegisteredByFerry {
		return nil
	}
	have.Spec.LeaseDurationSeconds = &r.o.LeaseDurationSeconds
	have.Labels = mergeLabels(have.Labels, ferryLabels())
	if _, err := leases.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update Lease %s/%s: %w", r.o.Name, LeaseName, err)
	}
	return nil
}

// waitForToken waits for kube-controller-manager's token controller to fill the token Secret and
// returns the token and the hub's root CA from it.
func (r *registrar) waitForToken(ctx context.Context) (token, rootCA []byte, err error) {
	timeout := r.o.TokenTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	name := AgentServiceAccount + "-token"
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		s, err := r.kube.CoreV1().Secrets(r.o.Name).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("get token Secret %s/%s: %w", r.o.Name, name, err)
		}
		token, rootCA = s.Data[corev1.ServiceAccountTokenKey], s.Data[corev1.ServiceAccountRootCAKey]
		return len(token) > 0, nil
	})
	if err != nil && ctx.Err() == nil && len(token) == 0 {
		return nil, nil, fmt.Errorf("the token Secret %s/%s got no token within %s: the hub's kube-controller-manager fills it "+
			"(its service-account token controller, --service-account-private-key-file); is it running? (%w)", r.o.Name, name, timeout, err)
	}
	return token, rootCA, err
}

// caOf returns the CA bundle a hub configuration trusts, if it names one.
func caOf(cfg *rest.Config) ([]byte, error) {
	if len(cfg.CAData) > 0 {
		return cfg.CAData, nil
	}
	if cfg.CAFile != "" {
		data, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("hub CA file: %w", err)
		}
		return data, nil
	}
	return nil, nil
}

// mergeLabels returns base with over's entries set over it; neither is changed.
func mergeLabels(base, over map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}
