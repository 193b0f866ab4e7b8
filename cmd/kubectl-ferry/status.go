package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/ferry-mc/ferry/internal/statusview"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

var (
	manifestWorks      = workv1.SchemeGroupVersion.WithResource("manifestworks")
	applicationConfigs = v1alpha2.SchemeGroupVersion.WithResource("applicationconfigurations")
)

func newStatusAppConfigCommand(conn *connection) *cobra.Command {
	var o outputOptions
	cmd := &cobra.Command{
		Use:     "appconfig NAME [-n NAMESPACE]",
		Aliases: []string{"appconfigs", "applicationconfiguration", "applicationconfigurations"},
		Short:   "An ApplicationConfiguration on every cluster it is delivered to, per manifest",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			ns, clients, err := conn.target()
			if err != nil {
				return err
			}
			return show(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, clients, appConfigView(clients, ns, args[0]))
		},
	}
	o.addFlags(cmd.Flags(), true)
	return cmd
}

func newStatusWorkCommand(conn *connection) *cobra.Command {
	var o outputOptions
	cmd := &cobra.Command{
		Use:     "work NAME -n CLUSTER",
		Aliases: []string{"works", "manifestwork", "manifestworks", "mw"},
		Short:   "One ManifestWork, per manifest, as its cluster's agent reports it",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			cluster, explicit, err := conn.namespace()
			if err != nil {
				return err
			}
			if !explicit {
				// A work lives in its cluster's namespace; "default" is never one.
				return errors.New("name the work's cluster with -n CLUSTER")
			}
			clients, err := conn.clients()
			if err != nil {
				return err
			}
			return show(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, clients, workView(clients, cluster, args[0]))
		},
	}
	o.addFlags(cmd.Flags(), true)
	return cmd
}

func workView(clients *hubClients, cluster, name string) view {
	return view{
		what: fmt.Sprintf("ManifestWork %s/%s", cluster, name),
		load: func(ctx context.Context) (statusview.View, error) {
			mw, err := clients.works.WorkV1().ManifestWorks(cluster).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("read ManifestWork %s/%s: %w", cluster, name, err)
			}
			return statusview.ForWork(mw), nil
		},
		watches: []watched{{resource: manifestWorks, namespace: cluster, fieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}},
		verdict: func(v statusview.View) (bool, []string, error) {
			w := v.(statusview.Work)
			return w.Healthy, w.Problems(), nil
		},
	}
}

func appConfigView(clients *hubClients, namespace, name string) view {
	// The works of an AppConfig are found by the labels the hub gives them, in every cluster's namespace.
	ofApp := labels.SelectorFromSet(labels.Set{v1alpha2.LabelAppConfigNamespace: namespace, v1alpha2.LabelAppConfigName: name}).String()
	appSet := watched{resource: applicationConfigs, namespace: namespace, fieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	// worksForbidden: the user may not list ManifestWorks, which live in the cluster namespaces — a
	// tenant who may read only her own namespace. The view is then the AppConfig's status alone
	// (statusview.ForAppConfigStatus), and only the AppConfig is watched: a watch of the works would
	// be refused, and never sync.
	worksForbidden := false
	listWorks := func(ctx context.Context, limit int64) (*workv1.ManifestWorkList, error) {
		works, err := clients.works.WorkV1().ManifestWorks(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: ofApp, Limit: limit})
		worksForbidden = apierrors.IsForbidden(err)
		return works, err
	}
	return view{
		what: fmt.Sprintf("ApplicationConfiguration %s/%s", namespace, name),
		load: func(ctx context.Context) (statusview.View, error) {
			app, err := readAppConfig(ctx, clients, namespace, name)
			if apierrors.IsNotFound(err) {
				// Waited for: find out now whether its works can be watched.
				_, _ = listWorks(ctx, 1)
			}
			if err != nil {
				return nil, err
			}
			// Listed after the AppConfig was read: a work is never older than the Ready it is judged by.
			works, err := listWorks(ctx, 0)
			switch {
			case worksForbidden:
				return statusview.ForAppConfigStatus(app), nil
			case err != nil:
				return nil, fmt.Errorf("list the ManifestWorks of ApplicationConfiguration %s/%s: %w", namespace, name, err)
			}
			return statusview.ForAppConfig(app, works.Items), nil
		},
		watchesAfterLoad: func() []watched {
			if worksForbidden {
				return []watched{appSet}
			}
			return []watched{appSet, {resource: manifestWorks, labelSelector: ofApp}}
		},
		verdict: func(v statusview.View) (bool, []string, error) {
			a := v.(statusview.AppConfig)
			return a.Healthy, a.Problems(), nil
		},
	}
}

// readAppConfig reads the AppConfig name of namespace.
func readAppConfig(ctx context.Context, clients *hubClients, namespace, name string) (*v1alpha2.ApplicationConfiguration, error) {
	u, err := clients.dynamic.Resource(applicationConfigs).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read ApplicationConfiguration %s/%s: %w", namespace, name, err)
	}
	app := &v1alpha2.ApplicationConfiguration{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, app); err != nil {
		return nil, fmt.Errorf("decode ApplicationConfiguration %s/%s: %w", namespace, name, err)
	}
	return app, nil
}
