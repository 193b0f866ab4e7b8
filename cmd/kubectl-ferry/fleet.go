package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/ferry-mc/ferry/internal/statusview"
	"github.com/ferry-mc/ferry/pkg/apis/core/v1alpha2"
)

// listChunk is how many objects one list request of a fleet view asks for (Limit, then Continue): the
// API server sends a fleet's works in pages, and the plugin keeps of each page only its lines.
var listChunk int64 = 500

// fleetQuery is what a fleet view (`get works`, `drift`) selects.
type fleetQuery struct {
	// namespace is the AppConfigs' namespace (-n, else the kubeconfig's): of --app, and of the
	// AppConfigs read instead of the works by a user who may not list these.
	namespace string
	// cluster: only the works in this cluster's namespace.
	cluster string
	// app: only the works of the AppConfig of that name in namespace.
	app string
	// unhealthy, drifted: only the works that are not fine, that have a drifted object.
	unhealthy, drifted bool
}

func (q *fleetQuery) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&q.cluster, "cluster", "", "Only the ManifestWorks of this managed `CLUSTER` (its namespace on the hub).")
	cmd.Flags().StringVar(&q.app, "app", "", "Only the ManifestWorks of the ApplicationConfiguration `NAME` of the namespace (-n, else the kubeconfig's).")
}

// keeps says whether the line w is selected (--cluster, --unhealthy, --drifted; --app selects on the
// API server).
func (q fleetQuery) keeps(w statusview.FleetWork) bool {
	return (q.cluster == "" || w.Cluster == q.cluster) && (!q.unhealthy || !w.Fine()) && (!q.drifted || w.Drifted > 0)
}

func newGetCommand(conn *connection) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get",
		Short: "Fleet-wide lists: the ManifestWorks of every cluster, in one table",
		Args:  cobra.NoArgs,
	}
	var q fleetQuery
	var o outputOptions
	works := &cobra.Command{
		Use:     "works [--cluster CLUSTER] [--app NAME [-n NAMESPACE]] [--unhealthy] [--drifted] [-o json|yaml]",
		Aliases: []string{"work", "manifestworks", "manifestwork", "mw"},
		Short:   "Every ManifestWork of every cluster: its AppConfig, Applied, Available, health, how many of its objects drifted",
		Long: "Lists the ManifestWorks of all the cluster namespaces (of one, with --cluster) in pages, and judges each report as\n" +
			"ferry-hub does (pkg/workreport): APPLIED and AVAILABLE are the work's own conditions about its generation (Unknown\n" +
			"while not reported), HEALTH aggregates its manifests' (Degraded, else Progressing, else Unknown, else Healthy),\n" +
			"DRIFTED counts its objects changed on the cluster and put back for its generation. APP is the AppConfig ferry-hub\n" +
			"delivers with it (- for other works). --unhealthy keeps the works that are not fine: APPLIED or AVAILABLE not True,\n" +
			"or HEALTH not Healthy. A user who may not list ManifestWorks gets the lines the status of her AppConfigs gives\n" +
			"(in -n NAMESPACE), and a note on stderr saying so.",
		Args: cobra.NoArgs,
		RunE: runFleetView(conn, &q, &o, fleetWorks),
	}
	q.addFlags(works)
	works.Flags().BoolVar(&q.unhealthy, "unhealthy", false, "Only the works that are not fine: Applied or Available not True (False, or not reported for the work's generation), or health not Healthy.")
	works.Flags().BoolVar(&q.drifted, "drifted", false, "Only the works with at least one object changed on the cluster and put back for the work's generation.")
	o.addFormatFlag(works.Flags())
	cmd.AddCommand(works)
	return cmd
}

func newDriftCommand(conn *connection) *cobra.Command {
	var q fleetQuery
	var o outputOptions
	cmd := &cobra.Command{
		Use:   "drift [--cluster CLUSTER] [--app NAME [-n NAMESPACE]] [-o json|yaml]",
		Short: "Every object changed on its cluster and put back, fleet-wide: by whom, which fields, how often, when",
		Long: "Lists the ManifestWorks of all the cluster namespaces (of one, with --cluster) in pages and prints a line per object\n" +
			"whose manifest has a Drifted report for its work's generation, the latest changed first. A user who may not list\n" +
			"ManifestWorks gets the objects the status of her AppConfigs names (in -n NAMESPACE; at most 5 each) with their\n" +
			"counts, and a note on stderr saying so.",
		Args: cobra.NoArgs,
		RunE: runFleetView(conn, &q, &o, fleetDrift),
	}
	q.addFlags(cmd)
	o.addFormatFlag(cmd.Flags())
	return cmd
}

// runFleetView is the run of a fleet view's command: it reads the view with read and prints it.
func runFleetView[V statusview.View](conn *connection, q *fleetQuery, o *outputOptions,
	read func(context.Context, *hubClients, fleetQuery, io.Writer) (V, error)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		if err := o.validate(); err != nil {
			return err
		}
		ns, clients, err := conn.target()
		if err != nil {
			return err
		}
		q.namespace = ns
		v, err := read(cmd.Context(), clients, *q, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		return statusview.Write(cmd.OutOrStdout(), o.format, v)
	}
}

// fleetWorks is the line of every work q selects; for a user who may not list them, the lines of the
// status of her AppConfigs, after a note on errOut saying why.
func fleetWorks(ctx context.Context, clients *hubClients, q fleetQuery, errOut io.Writer) (statusview.FleetWorks, error) {
	v := statusview.FleetWorks{Works: []statusview.FleetWork{}}
	err := eachWorkPage(ctx, clients, q, func(mw *workv1.ManifestWork) {
		if w := statusview.ForFleetWork(mw); q.keeps(w) {
			v.Works = append(v.Works, w)
		}
	})
	if !apierrors.IsForbidden(err) {
		return v, err
	}
	apps, err := appConfigsInstead(ctx, clients, q, errOut, err)
	if err != nil {
		return v, err
	}
	v = statusview.ForFleetWorksStatus(q.namespace, apps)
	kept := v.Works[:0]
	for _, w := range v.Works {
		if q.keeps(w) {
			kept = append(kept, w)
		}
	}
	v.Works = kept
	return v, nil
}

// fleetDrift is every drifted object of the works q selects; for a user who may not list them, those
// the status of her AppConfigs names, after a note on errOut saying why.
func fleetDrift(ctx context.Context, clients *hubClients, q fleetQuery, errOut io.Writer) (statusview.FleetDrift, error) {
	var objects []statusview.FleetDriftedObject
	err := eachWorkPage(ctx, clients, q, func(mw *workv1.ManifestWork) {
		objects = append(objects, statusview.DriftedObjectsOf(mw)...)
	})
	if !apierrors.IsForbidden(err) {
		return statusview.ForFleetDrift(objects), err
	}
	apps, err := appConfigsInstead(ctx, clients, q, errOut, err)
	if err != nil {
		return statusview.FleetDrift{}, err
	}
	v := statusview.ForFleetDriftStatus(q.namespace, apps)
	if q.cluster != "" {
		kept := v.Objects[:0]
		for _, o := range v.Objects {
			if o.Cluster == q.cluster {
				kept = append(kept, o)
			}
		}
		v.Objects = kept
	}
	return v, nil
}

// eachWorkPage lists the works q selects, page by page (listChunk at a time), handing each work to
// visit: in q.cluster's namespace or in all, and of q.app by the labels ferry-hub gives its works, so
// that the API server filters. The works are decoded beside the reading, so that the next page is asked
// for as soon as one is read: the API server sends one page at a time, and a fleet's list is bound by
// its sending (BenchmarkGetWorks10000: 2.5 s, against 3.3 s decoding each page before asking for the
// next).
func eachWorkPage(ctx context.Context, clients *hubClients, q fleetQuery, visit func(*workv1.ManifestWork)) error {
	opts := metav1.ListOptions{Limit: listChunk}
	if q.app != "" {
		opts.LabelSelector = labels.SelectorFromSet(labels.Set{v1alpha2.LabelAppConfigNamespace: q.namespace, v1alpha2.LabelAppConfigName: q.app}).String()
	}
	where := "in all the cluster namespaces"
	if q.cluster != "" {
		where = "in namespace " + q.cluster
	}
	ctx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	items := make(chan []byte, 4*listChunk)
	decoded := make(chan error, 1)
	go func() {
		var err error
		for item := range items {
			if err != nil {
				continue // until the reading stops
			}
			mw := &workv1.ManifestWork{}
			if err = sigsjson.UnmarshalCaseSensitivePreserveInts(item, mw); err != nil {
				stopReading()
				continue
			}
			visit(mw)
		}
		decoded <- err
	}()
	err := readWorkPages(ctx, clients, q.cluster, opts, items)
	close(items)
	if decodeErr := <-decoded; decodeErr != nil {
		err = fmt.Errorf("decode a ManifestWork: %w", decodeErr)
	}
	if err != nil {
		return fmt.Errorf("list ManifestWorks %s: %w", where, err)
	}
	return nil
}

// readWorkPages lists the works of namespace ("" for all) with opts, page by page, sending each work's
// JSON to items as it is read.
func readWorkPages(ctx context.Context, clients *hubClients, namespace string, opts metav1.ListOptions, items chan<- []byte) error {
	for {
		body, err := clients.works.WorkV1().RESTClient().Get().Namespace(namespace).Resource("manifestworks").
			VersionedParams(&opts, metav1.ParameterCodec).Stream(ctx)
		if err != nil {
			return err
		}
		dec := json.NewDecoder(body)
		var meta metav1.ListMeta
		err = eachMember(dec, func(key string) error {
			switch key {
			case "items":
				return eachElement(dec, func() error {
					var item json.RawMessage
					if err := dec.Decode(&item); err != nil {
						return err
					}
					items <- item
					return nil
				})
			case "metadata":
				return dec.Decode(&meta)
			}
			var skip json.RawMessage
			return dec.Decode(&skip)
		})
		body.Close()
		if err != nil {
			return fmt.Errorf("read the list: %w", err)
		}
		if meta.Continue == "" {
			return nil
		}
		opts.Continue = meta.Continue
	}
}

// eachMember reads a JSON object from dec, calling member with each key; member reads the value.
func eachMember(dec *json.Decoder, member func(key string) error) error {
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("an object key is %v", tok)
		}
		if err := member(key); err != nil {
			return err
		}
	}
	return expectDelim(dec, '}')
}

// eachElement reads a JSON array (or null) from dec, calling element to read each value.
func eachElement(dec *json.Decoder, element func() error) error {
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return err
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("want an array, got %v", tok)
	}
	for dec.More() {
		if err := element(); err != nil {
			return err
		}
	}
	return expectDelim(dec, ']')
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != want {
		return fmt.Errorf("want %v, got %v", want, tok)
	}
	return nil
}

// appConfigsInstead reads, for a user the list of works refused (forbidden), the AppConfigs of
// q.namespace (only q.app's with --app), after a line on errOut saying why.
func appConfigsInstead(ctx context.Context, clients *hubClients, q fleetQuery, errOut io.Writer, forbidden error) ([]*v1alpha2.ApplicationConfiguration, error) {
	where := "cluster-wide"
	if q.cluster != "" {
		where = "in namespace " + q.cluster
	}
	if q.app != "" {
		app, err := readAppConfig(ctx, clients, q.namespace, q.app)
		if err != nil {
			return nil, fmt.Errorf("%w; and instead: %w", forbidden, err)
		}
		fmt.Fprintf(errOut, "kubectl-ferry: you may not list ManifestWorks %s: showing what the status of AppConfig %s/%s says.\n", where, q.namespace, q.app)
		return []*v1alpha2.ApplicationConfiguration{app}, nil
	}
	var apps []*v1alpha2.ApplicationConfiguration
	opts := metav1.ListOptions{Limit: listChunk}
	for {
		page, err := clients.dynamic.Resource(applicationConfigs).Namespace(q.namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("%w; and instead: list the ApplicationConfigurations of namespace %s: %w", forbidden, q.namespace, err)
		}
		for _, u := range page.Items {
			app := &v1alpha2.ApplicationConfiguration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, app); err != nil {
				return nil, fmt.Errorf("decode ApplicationConfiguration %s/%s: %w", u.GetNamespace(), u.GetName(), err)
			}
			apps = append(apps, app)
		}
		if page.GetContinue() == "" {
			break
		}
		opts.Continue = page.GetContinue()
	}
	fmt.Fprintf(errOut, "kubectl-ferry: you may not list ManifestWorks %s: showing what the status of the AppConfigs in namespace %s says.\n", where, q.namespace)
	return apps, nil
}
