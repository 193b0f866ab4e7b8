package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// LeaderElectionLeaseName is the Lease on the spoke that ferry-agent replicas of one cluster elect
// their leader with. It is the name OCM's work agent uses: library-go's controllercmd names the lock
// of a component "<component>-lock", and OCM runs its work agent as component "work-agent", in the
// agent's namespace. On a cluster joined with `clusteradm join`, Ferry's agent runs in that same
// namespace (deploy/agent/clusteradm), so the two contend for one Lease: should OCM's work agent be
// started again next to Ferry's, at most one of them leads, and the two never apply the same
// cluster's works at once.
const LeaderElectionLeaseName = "work-agent-lock"

// DefaultLeaderElectionNamespace is where the Lease lives when neither --leader-election-namespace,
// POD_NAMESPACE nor an in-cluster service account says: the klusterlet's agent namespace.
const DefaultLeaderElectionNamespace = "open-cluster-management-agent"

// Leader election timings: controller-runtime's defaults, not library-go's (137s/107s/26s, which OCM's
// work agent uses). A killed leader is replaced within about a lease duration, so library-go's values
// would leave a cluster's works unapplied for over two minutes after a crash; 15s/10s/2s fail over within
// seconds and cost a spoke one small Lease update every 2 seconds.
const (
	DefaultLeaderElectionLeaseDuration = 15 * time.Second
	DefaultLeaderElectionRenewDeadline = 10 * time.Second
	DefaultLeaderElectionRetryPeriod   = 2 * time.Second
)

// serviceAccountNamespaceFile is where a pod finds its namespace when POD_NAMESPACE is not set.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// defaultLeaderElectionNamespace is POD_NAMESPACE, else the namespace of the pod's service account,
// else DefaultLeaderElectionNamespace.
func defaultLeaderElectionNamespace(getenv func(string) string, readFile func(string) ([]byte, error)) string {
	if ns := strings.TrimSpace(getenv("POD_NAMESPACE")); ns != "" {
		return ns
	}
	if data, err := readFile(serviceAccountNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(data)); ns != "" {
			return ns
		}
	}
	return DefaultLeaderElectionNamespace
}

// leaderElectionIdentity is POD_NAME, else the host name, then "_" and a random suffix: two processes
// on one host (or a restarted container in the same pod) are different candidates, so a new process
// never mistakes the Lease of a dead one for its own.
func leaderElectionIdentity(getenv func(string) string, hostname func() (string, error)) (string, error) {
	name := strings.TrimSpace(getenv("POD_NAME"))
	if name == "" {
		var err error
		if name, err = hostname(); err != nil {
			return "", fmt.Errorf("leader election identity: no POD_NAME and no host name: %w", err)
		}
	}
	return name + "_" + rand.String(10), nil
}

// validateLeaderElection reports timings client-go would refuse, naming the flags.
func (o *Options) validateLeaderElection() error {
	if o.DisableLeaderElection {
		return nil
	}
	switch {
	case o.LeaderElectionRetryPeriod <= 0:
		return fmt.Errorf("--%s %s: must be positive", flagLeaderElectionRetryPeriod, o.LeaderElectionRetryPeriod)
	case float64(o.LeaderElectionRenewDeadline) <= leaderelection.JitterFactor*float64(o.LeaderElectionRetryPeriod):
		return fmt.Errorf("--%s %s: must be more than %g times --%s (%s)", flagLeaderElectionRenewDeadline, o.LeaderElectionRenewDeadline,
			leaderelection.JitterFactor, flagLeaderElectionRetryPeriod, o.LeaderElectionRetryPeriod)
	case o.LeaderElectionLeaseDuration <= o.LeaderElectionRenewDeadline:
		return fmt.Errorf("--%s %s: must be more than --%s (%s)", flagLeaderElectionLeaseDuration, o.LeaderElectionLeaseDuration,
			flagLeaderElectionRenewDeadline, o.LeaderElectionRenewDeadline)
	}
	return nil
}

// runLeaderElected runs work only while this process holds the Lease, and campaigns again whenever it
// loses it, until ctx is done. Losing the Lease (the spoke API server unreachable for longer than the
// renew deadline, or another candidate taking over an expired Lease) never ends the process: work's
// context is cancelled and runLeaderElected waits until work has returned before it campaigns again,
// so a new leader never overlaps with this one's workers. An error work returns by itself (not because
// leadership ended) ends runLeaderElected with it.
//
// standby is told whether this process is waiting for the Lease, for /readyz.
func (o *Options) runLeaderElected(ctx context.Context, standby func(bool), work func(context.Context) error) error {
	log := klog.FromContext(ctx).WithValues("lease", o.LeaderElectionNamespace+"/"+LeaderElectionLeaseName)
	spoke, err := o.SpokeConfig()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(spoke)
	if err != nil {
		return fmt.Errorf("spoke client for leader election: %w", err)
	}
	identity, err := leaderElectionIdentity(os.Getenv, os.Hostname)
	if err != nil {
		return err
	}
	log = log.WithValues("identity", identity)
	lock := &candidateLock{
		Interface: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: o.LeaderElectionNamespace, Name: LeaderElectionLeaseName},
			Client:     client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
		},
		log: log,
	}
	for {
		standby(true)
		log.Info("waiting to lead: only the holder of the Lease applies works and reports status")
		lost, err := o.leadOnce(ctx, lock, work)
		standby(false)
		switch {
		case ctx.Err() != nil:
			return nil
		case lost:
			log.Info("lost the Lease; the workers have stopped; campaigning again", "error", err)
			continue
		}
		return err
	}
}

// leadOnce campaigns for the Lease and runs work while holding it. It returns once work has returned:
// lost says whether work ended because leadership ended (or was never reached), and err is what work
// returned.
func (o *Options) leadOnce(ctx context.Context, lock *candidateLock, work func(context.Context) error) (lost bool, err error) {
	electCtx, stopElection := context.WithCancel(ctx)
	defer stopElection()
	lock.acquired.Store(false)
	var (
		workDone = make(chan struct{})
		workErr  error
		workLost bool
	)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaderElectionLeaseDuration,
		RenewDeadline:   o.LeaderElectionRenewDeadline,
		RetryPeriod:     o.LeaderElectionRetryPeriod,
		ReleaseOnCancel: !o.keepLeaseOnStop,
		Name:            LeaderElectionLeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			// client-go runs this in a goroutine of its own and does not wait for it: workDone is how
			// leadOnce waits.
			OnStartedLeading: func(leadCtx context.Context) {
				defer close(workDone)
				klog.FromContext(ctx).Info("leading: starting the agent", "lease", lock.Describe(), "identity", lock.Identity())
				workErr = work(leadCtx)
				workLost = leadCtx.Err() != nil
				// work ended by itself (an error, or its own stop): give up leading too.
				stopElection()
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return false, fmt.Errorf("leader election: %w", err)
	}
	elector.Run(electCtx)
	// client-go calls OnStartedLeading exactly when it has written the Lease as its holder during
	// this Run; the lock saw that write.
	if !lock.acquired.Load() {
		return true, nil
	}
	<-workDone
	return workLost, workErr
}

// candidateLock is the Lease lock of one candidate. It records when this candidate has written itself
// as the holder (so that leadOnce knows client-go is starting the leader's work), and says once, in a
// line a person can act on, that the Lease's namespace does not exist; client-go keeps retrying, and
// so the agent stands by until someone creates the namespace or fixes --leader-election-namespace.
type candidateLock struct {
	resourcelock.Interface
	log      logr.Logger
	acquired atomic.Bool
	mu       sync.Mutex
	reported bool
}

func (l *candidateLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, ler)
	if err == nil && ler.HolderIdentity == l.Identity() {
		l.acquired.Store(true)
	}
	return err
}

func (l *candidateLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, ler)
	if err == nil && ler.HolderIdentity == l.Identity() {
		l.acquired.Store(true)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var status apierrors.APIStatus
	switch {
	case err == nil:
		l.reported = false
	case apierrors.IsNotFound(err) && errors.As(err, &status) && status.Status().Details != nil && status.Status().Details.Kind == "namespaces":
		if !l.reported {
			l.reported = true
			ns := status.Status().Details.Name
			l.log.Error(err, "cannot lead: the leader-election namespace does not exist on the spoke; create it or set --"+flagLeaderElectionNamespace+
				" to a namespace that exists; retrying", "namespace", ns, "flag", "--"+flagLeaderElectionNamespace)
		}
	}
	return err
}
