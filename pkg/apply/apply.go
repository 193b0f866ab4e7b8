package apply

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/ferry-mc/ferry/pkg/workload"
	"github.com/ferry-mc/ferry/pkg/workreport"
)

// StrategyType names an update strategy. The values are those of the ManifestWork API's
// updateStrategy.type, plus Ferry's ApplyOnce and ApplyOnceForce.
type StrategyType string

const (
	// Update keeps the object equal to the desired manifest in the fields the manifest sets, through a
	// 3-way merge against the last applied record: it adds, changes and (by omission) removes what it
	// owns and leaves every other field alone.
	Update StrategyType = "Update"
	// CreateOnly creates a missing object and never updates an existing one.
	CreateOnly StrategyType = "CreateOnly"
	// ServerSideApply applies with server-side apply under a field manager.
	ServerSideApply StrategyType = "ServerSideApply"
	// ReadOnly never writes; it only reads the object.
	ReadOnly StrategyType = "ReadOnly"
	// ApplyOnce applies (as Update) only when the desired manifest changed since it was last applied, or
	// when the object is missing; changes made on the cluster are otherwise left alone.
	ApplyOnce StrategyType = "ApplyOnce"
	// ApplyOnceForce is ApplyOnce, except that an object deleted on the cluster is re-created only when
	// the desired manifest changed since it was last applied.
	ApplyOnceForce StrategyType = "ApplyOnceForce"
)

// Operation says what Apply did.
type Operation string

const (
	Created   Operation = "Created"
	Updated   Operation = "Updated"
	Unchanged Operation = "Unchanged" // nothing was written: the object already matched
	Skipped   Operation = "Skipped"   // nothing was written: the strategy chose not to (see Result.Message)
)

// Options configures one Apply.
type Options struct {
	// Strategy defaults to Update.
	Strategy StrategyType
	// FieldManager is the manager name for ServerSideApply; defaults to DefaultFieldManager. It is also
	// the field manager of the writes of every other strategy.
	FieldManager string
	// Force takes ownership of conflicting fields under ServerSideApply.
	Force bool
	// IgnoreFields leaves fields alone under ServerSideApply (see IgnoreField).
	IgnoreFields []IgnoreField
	// AppliedHash is the Hash of the manifest the caller last applied for this object, from its own
	// record. ApplyOnceForce needs it to tell "deleted on the cluster" from "never applied".
	AppliedHash string
	// Owner, when set, is added to the object's owner references (and kept there).
	Owner *metav1.OwnerReference
	// Mapping, when set, is the resource the manifest's kind maps to as the caller resolved it, and Apply
	// does not map the kind again. A caller that chooses the options by resource (the agent picks a
	// manifest's strategy by its manifestConfigs) passes the mapping it chose by, so that the strategy
	// and the resource written can never disagree.
	Mapping *meta.RESTMapping
	// ReportDiff asks the ReadOnly strategy to say in Result.Diff what applying the manifest under
	// Update would change on the object it read (see computeDiff): how a report-only delivery is told,
	// without a request of its own. Other strategies ignore it.
	ReportDiff bool
}

// DefaultFieldManager is the field manager Ferry writes under unless told otherwise; it is the name
// the ManifestWork API defaults to, so objects keep their manager when a cluster moves between agents.
const DefaultFieldManager = "work-agent"

// Result is the outcome of Apply.
type Result struct {
	// Resource is the resource the object's kind maps to on the cluster.
	Resource schema.GroupVersionResource
	// Namespaced says whether that resource is namespaced.
	Namespaced bool
	// Object is the object on the cluster after Apply, or nil when it does not exist.
	Object    *unstructured.Unstructured
	Operation Operation
	// Hash identifies the desired manifest; record it and pass it back as Options.AppliedHash.
	Hash string
	// Message explains a Skipped operation.
	Message string
	// Drift, set when an Updated operation put back what was changed on the cluster, says what and by
	// whom (Update and ServerSideApply only).
	Drift *Drift
	// Diff, set by ReadOnly when Options.ReportDiff asks for it, is what applying the manifest would
	// change on the cluster, in the terms of a WouldChange condition. Secret data is never in it.
	Diff *workreport.Diff
}

// Applier applies objects to one cluster.
type Applier struct {
	client dynamic.Interface
	mapper meta.RESTMapper
	store  RecordStore
	exists ExistenceHint
}

// ExistenceHint tells, from a cache the caller keeps (a watch), whether an object exists. known is
// false when the cache cannot tell. When it knows the object is missing, Apply creates it without
// reading it first; a stale answer costs one extra request, never a wrong result.
type ExistenceHint func(resource schema.GroupVersionResource, namespace, name string) (exists, known bool)

// New returns an Applier writing through client; mapper maps kinds to resources. A mapper that
// implements meta.ResettableRESTMapper is reset once when a kind is unknown, so that a CRD installed
// after the mapper was filled is found.
func New(client dynamic.Interface, mapper meta.RESTMapper) *Applier {
	return &Applier{client: client, mapper: mapper}
}

// WithExistenceHint makes the Applier skip the read of objects hint knows to be missing.
func (a *Applier) WithExistenceHint(hint ExistenceHint) *Applier {
	a.exists = hint
	return a
}

// WithRecordStore makes the Applier keep last-applied records too large for an annotation in store.
// Without one, such a manifest fails under Update, ApplyOnce and ApplyOnceForce.
func (a *Applier) WithRecordStore(store RecordStore) *Applier {
	a.store = store
	return a
}

// strategy is one update strategy: it makes the cluster's object (current, nil when missing) follow
// the desired one.
type strategy interface {
	apply(ctx context.Context, r *request) (Result, error)
}

var strategies = map[StrategyType]strategy{
	Update:          updateStrategy{},
	CreateOnly:      createOnlyStrategy{},
	ReadOnly:        readOnlyStrategy{},
	ApplyOnce:       applyOnceStrategy{force: false},
	ApplyOnceForce:  applyOnceStrategy{force: true},
	ServerSideApply: serverSideApplyStrategy{},
}

// request is what a strategy works on.
type request struct {
	desired *unstructured.Unstructured // normalized manifest, with the owner added
	current *unstructured.Unstructured // nil when the object does not exist
	client  dynamic.ResourceInterface
	store   RecordStore
	opts    Options
	result  Result // Resource, Namespaced and Hash filled in
}

// read fetches the object's current state; a missing object is no error.
func (r *request) read(ctx context.Context) error {
	current, err := r.client.Get(ctx, r.desired.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		current = nil
	case err != nil:
		return fmt.Errorf("get %s: %w", describe(r.desired), err)
	}
	r.current = current
	return nil
}

// storeKey names the object's record in the RecordStore.
func (r *request) storeKey() string {
	gr := r.result.Resource.GroupResource()
	return workload.HashBytes([]byte(gr.String() + "/" + r.desired.GetNamespace() + "/" + r.desired.GetName()))
}

// Apply makes the cluster's object follow manifest under opts.Strategy. Errors say what a person can
// do about them: see InvalidManifestError, UnknownKindError and ConflictError.
func (a *Applier) Apply(ctx context.Context, manifest *unstructured.Unstructured, opts Options) (Result, error) {
	if opts.Strategy == "" {
		opts.Strategy = Update
	}
	if opts.FieldManager == "" {
		opts.FieldManager = DefaultFieldManager
	}
	s, ok := strategies[opts.Strategy]
	if !ok {
		return Result{}, &InvalidManifestError{Reason: fmt.Sprintf("unknown update strategy %q", opts.Strategy)}
	}
	desired, err := workload.Normalize(manifest)
	if err != nil {
		return Result{}, err
	}
	mapping := opts.Mapping
	if mapping == nil {
		if mapping, err = a.mapping(desired.GroupVersionKind()); err != nil {
			return Result{}, err
		}
	} else if mapping.GroupVersionKind != desired.GroupVersionKind() {
		return Result{}, fmt.Errorf("the mapping given for %s is of %s", desired.GroupVersionKind(), mapping.GroupVersionKind)
	}
	r := &request{desired: desired, opts: opts, store: a.store}
	r.result.Resource = mapping.Resource
	r.result.Namespaced = mapping.Scope.Name() == meta.RESTScopeNameNamespace
	switch {
	case r.result.Namespaced && desired.GetNamespace() == "":
		return Result{}, &InvalidManifestError{Reason: fmt.Sprintf("%s %q is namespaced but the manifest has no metadata.namespace", desired.GetKind(), desired.GetName())}
	case !r.result.Namespaced && desired.GetNamespace() != "":
		// The API server would ignore it; drop it so that it does not show up as a difference.
		desired.SetNamespace("")
	}
	// After the namespace of a cluster-scoped object is dropped: the hash is that of the record written,
	// which RecordHash computes too.
	r.result.Hash = workload.Hash(desired)
	if r.result.Namespaced {
		r.client = a.client.Resource(mapping.Resource).Namespace(desired.GetNamespace())
	} else {
		r.client = a.client.Resource(mapping.Resource)
	}
	skippedRead := false
	if a.exists != nil {
		if exists, known := a.exists(mapping.Resource, desired.GetNamespace(), desired.GetName()); known && !exists {
			skippedRead = true
		}
	}
	if !skippedRead {
		if err := r.read(ctx); err != nil {
			return Result{}, err
		}
	}
	res, err := s.apply(ctx, r)
	if skippedRead && apierrors.IsAlreadyExists(err) {
		// The hint was stale: read the object and apply again.
		if err := r.read(ctx); err != nil {
			return Result{}, err
		}
		res, err = s.apply(ctx, r)
	}
	current := r.current
	if err != nil {
		// Say what is on the cluster even when the write failed.
		res = r.result
		res.Object = current
		return res, fmt.Errorf("%s %s: %w", opts.Strategy, describe(desired), err)
	}
	return res, nil
}

func (a *Applier) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		if r, ok := a.mapper.(meta.ResettableRESTMapper); ok {
			r.Reset()
			m, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
	}
	if meta.IsNoMatchError(err) {
		return nil, &UnknownKindError{GVK: gvk}
	}
	if err != nil {
		return nil, fmt.Errorf("map %s to a resource: %w", gvk, err)
	}
	return m, nil
}

// InvalidManifestError is a manifest that cannot be applied as written: the error of workload.Normalize's
// checks, which Apply runs first, and of the engine's own (an unknown strategy, a record too large).
type InvalidManifestError = workload.InvalidError

// UnknownKindError is a kind the cluster does not serve (a missing CRD, a typo in apiVersion).
type UnknownKindError struct{ GVK schema.GroupVersionKind }

func (e *UnknownKindError) Error() string {
	return fmt.Sprintf("the cluster does not serve kind %q in apiVersion %q (is its CustomResourceDefinition installed?)",
		e.GVK.Kind, e.GVK.GroupVersion().String())
}

// IsInvalidManifest reports whether err is an InvalidManifestError.
func IsInvalidManifest(err error) bool {
	var e *InvalidManifestError
	return errors.As(err, &e)
}

// IsUnknownKind reports whether err is an UnknownKindError.
func IsUnknownKind(err error) bool {
	var e *UnknownKindError
	return errors.As(err, &e)
}

func describe(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return fmt.Sprintf("%s %s/%s", u.GetKind(), ns, u.GetName())
	}
	return fmt.Sprintf("%s %s", u.GetKind(), u.GetName())
}
