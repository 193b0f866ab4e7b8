package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/ferry-mc/ferry/internal/statusview"
)

// view is what one command shows: how to read it from the hub, which objects' changes change it, and,
// for views a script can wait on, its verdict.
type view struct {
	// what names the view in messages, e.g. "ManifestWork cluster1/hello".
	what string
	load func(ctx context.Context) (statusview.View, error)
	// watches are the objects the view is made of; a change of any of them reloads it.
	watches []watched
	// watchesAfterLoad, when set, replaces watches: what to watch, decided once the view has been
	// loaded (or found missing) — a view built from less than it would be, because the user may not
	// read all of it, watches only what it was built from.
	watchesAfterLoad func() []watched
	// verdict says whether v is what a wait waits for (healthy; a rollout complete), and if not why (one
	// line each); an error when it never will be without a person acting (a rollout halted), which
	// ends a wait in failure. nil: the view has none.
	verdict func(v statusview.View) (reached bool, problems []string, err error)
	// goal is what a wait waits for v to be, in messages: "healthy" when empty.
	goal string
}

// watched is a set of objects of one resource: in one namespace ("" for all, and for cluster-scoped
// resources), narrowed by field and label selectors.
type watched struct {
	resource                     schema.GroupVersionResource
	namespace                    string
	fieldSelector, labelSelector string
}

// show prints the view once, or follows it.
func show(ctx context.Context, out, errOut io.Writer, o outputOptions, clients *hubClients, v view) error {
	if !o.follows() {
		sv, err := v.load(ctx)
		if err != nil {
			return err
		}
		return statusview.Write(out, o.format, sv)
	}
	return follow(ctx, out, errOut, o, clients, v)
}

var errTimedOut = errors.New("timed out")

// follow prints the view, then again each time it changes, until ctx ends or the timeout passes, or,
// with o.until (--until-healthy; `rollout status --watch`), until its verdict is reached or fails.
// Watches of the objects the view is made of (their metadata only: every change of an object, status
// included, changes its resourceVersion) say when to read it again; the view is always read whole,
// with the same code as a single print.
func follow(ctx context.Context, out, errOut io.Writer, o outputOptions, clients *hubClients, v view) error {
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.timeout, errTimedOut)
		defer cancel()
	}
	// A view that cannot be read at all (no such kind, forbidden, unreachable) fails at once rather
	// than after the watches wait out the timeout.
	if _, err := v.load(ctx); err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		return err
	}
	sets := v.watches
	if v.watchesAfterLoad != nil {
		sets = v.watchesAfterLoad()
	}
	changed, stop, err := watch(ctx, clients, sets)
	if err != nil {
		return err
	}
	defer stop()

	var printed, missing string
	problems := []string{"not read yet"}
	for {
		sv, err := v.load(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return ended(ctx, o, v, problems)
		case apierrors.IsNotFound(err):
			// Often the object is about to be created (a script applies, then waits): keep watching.
			if msg := err.Error(); msg != missing {
				fmt.Fprintf(errOut, "%s; waiting for it\n", msg)
				missing = msg
			}
			problems = []string{err.Error()}
		case err != nil:
			return err
		default:
			missing = ""
			var b strings.Builder
			if err := statusview.Write(&b, o.format, sv); err != nil {
				return err
			}
			if text := b.String(); text != printed {
				if err := writeNext(out, o.format, printed != "", text); err != nil {
					return err
				}
				printed = text
			}
			if v.verdict != nil {
				var reached bool
				if reached, problems, err = v.verdict(sv); o.until && (reached || err != nil) {
					return err
				}
			}
		}
		select {
		case <-ctx.Done():
			return ended(ctx, o, v, problems)
		case <-changed:
		}
	}
}

// writeNext prints a view after the ones before it: tables apart by a blank line, YAML documents by a
// separator; JSON objects follow each other as a stream.
func writeNext(out io.Writer, format string, more bool, text string) error {
	if more {
		sep := ""
		switch format {
		case statusview.FormatTable:
			sep = "\n"
		case statusview.FormatYAML:
			sep = "---\n"
		}
		if _, err := io.WriteString(out, sep); err != nil {
			return err
		}
	}
	_, err := io.WriteString(out, text)
	return err
}

// ended is the outcome of following a view that ended before its verdict was reached: no error when
// only watching, else what is not as waited for.
func ended(ctx context.Context, o outputOptions, v view, problems []string) error {
	if !o.until {
		return nil
	}
	goal := cmp.Or(v.goal, "healthy")
	why := fmt.Sprintf("interrupted before %s was %s", v.what, goal)
	if errors.Is(context.Cause(ctx), errTimedOut) {
		why = fmt.Sprintf("%s is not %s after %s", v.what, goal, o.timeout)
	}
	return fmt.Errorf("%s:\n  %s", why, strings.Join(problems, "\n  "))
}

// watch starts an informer per watched set and returns a channel that receives after any change
// (coalesced: one pending signal at most), once every informer has listed. stop ends the informers
// and waits for them.
func watch(ctx context.Context, clients *hubClients, sets []watched) (changed <-chan struct{}, stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	signal := make(chan struct{}, 1)
	notify := func() {
		select {
		case signal <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}
	var running sync.WaitGroup
	stop = func() {
		cancel()
		running.Wait()
	}
	var synced []cache.InformerSynced
	for _, s := range sets {
		informer := metadatainformer.NewFilteredMetadataInformer(clients.metadata, s.resource, s.namespace, 0, cache.Indexers{},
			func(opts *metav1.ListOptions) {
				opts.FieldSelector, opts.LabelSelector = s.fieldSelector, s.labelSelector
			}).Informer()
		if _, err := informer.AddEventHandler(handler); err != nil {
			stop()
			return nil, nil, fmt.Errorf("watch %s: %w", s.resource.Resource, err)
		}
		running.Add(1)
		go func() {
			defer running.Done()
			informer.RunWithContext(ctx)
		}()
		synced = append(synced, informer.HasSynced)
	}
	// Read the view only once the watches run, so that no change after the read goes unnoticed. A
	// context that ends first is not an error here: the caller reports why it ended.
	cache.WaitForCacheSync(ctx.Done(), synced...)
	return signal, stop, nil
}
