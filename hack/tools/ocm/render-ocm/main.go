// Command render-ocm prints what clusteradm v1.2.0 applies, rendered by OCM's own charts and functions
// with the configuration clusteradm builds from its default flags. clusteradm itself is not served by
// the module proxy Ferry builds from, so Ferry's tests run this and apply its output with kubectl, in
// clusteradm's order (CRDs first, the rest once they are established):
//
//	render-ocm init --out-dir D   the hub's bootstrap credential of `clusteradm init` (hub-bootstrap.yaml):
//	                              the ClusterRole open-cluster-management:bootstrap, the ServiceAccount
//	                              agent-registration-bootstrap and their binding. The cluster-manager
//	                              operator and what it runs are left out: the tests run OCM's hub
//	                              registration controller as a process instead.
//	render-ocm join --out-dir D   `clusteradm join` on the managed cluster, Default mode: the klusterlet's
//	                              CRD (crds.yaml), then its namespaces, operator, bootstrap Secret and
//	                              Klusterlet (klusterlet.yaml).
//
// join's --work-image is clusteradm's `--klusterlet-values-file` with `images.overrides.workImage`: how a
// user points a klusterlet at Ferry's agent image at join time. join's --registration-auth grpc with
// --grpc-config is `clusteradm join --registration-auth grpc --grpc-server S`: the Klusterlet registers
// through OCM's gRPC server (registrationDriver.authType grpc), and the bootstrap Secret carries, beside
// the kubeconfig, the gRPC configuration clusteradm writes from --grpc-server, the hub's CA and the
// bootstrap token (url, caData, token) as config.yaml.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/component-base/featuregate"
	ocmfeature "open-cluster-management.io/api/feature"
	operatorv1 "open-cluster-management.io/api/operator/v1"
	"open-cluster-management.io/ocm/pkg/operator/helpers/chart"
	"sigs.k8s.io/yaml"
)

// operatorNamespace is where clusteradm installs OCM's operators, on the hub and on a managed cluster.
const operatorNamespace = "open-cluster-management"

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "init" && os.Args[1] != "join") {
		fmt.Fprintln(os.Stderr, "usage: render-ocm init|join --out-dir DIR [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("render-ocm "+os.Args[1], flag.ExitOnError)
	outDir := fs.String("out-dir", ".", "directory to write the YAML files into")
	clusterName := fs.String("cluster-name", "", "join: the managed cluster's name (clusteradm join --cluster-name)")
	bootstrap := fs.String("bootstrap-kubeconfig", "", "join: file holding the bootstrap kubeconfig to the hub (what clusteradm join builds from --hub-apiserver and --hub-token)")
	registry := fs.String("image-registry", "quay.io/open-cluster-management", "join: registry of OCM's images (clusteradm join --image-registry)")
	tag := fs.String("tag", "v1.2.0", "join: tag of OCM's images (clusteradm join --bundle-version)")
	workImage := fs.String("work-image", "", "join: image of the work agent, overriding <registry>/work:<tag> (values file images.overrides.workImage)")
	registrationAuth := fs.String("registration-auth", "", "join: how the klusterlet registers: empty (csr, the hub's API server) or grpc (OCM's gRPC server; needs --grpc-config)")
	grpcConfig := fs.String("grpc-config", "", "join: with --registration-auth grpc, file holding the bootstrap gRPC configuration (url, caData, token)")
	_ = fs.Parse(os.Args[2:])

	var err error
	switch os.Args[1] {
	case "init":
		err = renderInit(*outDir)
	case "join":
		if *clusterName == "" || *bootstrap == "" {
			fmt.Fprintln(os.Stderr, "render-ocm join: --cluster-name and --bootstrap-kubeconfig are required")
			os.Exit(2)
		}
		if (*registrationAuth == operatorv1.GRPCAuthType) != (*grpcConfig != "") || (*registrationAuth != "" && *registrationAuth != operatorv1.GRPCAuthType) {
			fmt.Fprintln(os.Stderr, "render-ocm join: --registration-auth grpc and --grpc-config go together (no other --registration-auth is rendered)")
			os.Exit(2)
		}
		err = renderJoin(*outDir, *clusterName, *bootstrap, *grpcConfig, *registry, *tag, *workImage)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "render-ocm:", err)
		os.Exit(1)
	}
}

// bootstrapObjects are the objects of the cluster-manager chart that make the hub's bootstrap
// credential, by kind and name.
var bootstrapObjects = []string{
	"ClusterRole/open-cluster-management:bootstrap",
	"ServiceAccount/agent-registration-bootstrap",
	"ClusterRoleBinding/open-cluster-management:bootstrap:agent-registration",
	"Namespace/" + operatorNamespace,
}

// renderInit renders the cluster-manager chart as clusteradm init v1.2.0 does by default (a bootstrap
// ServiceAccount, not a bootstrap token) and keeps the bootstrap credential's objects.
func renderInit(outDir string) error {
	config := chart.NewDefaultClusterManagerChartConfig()
	config.CreateNamespace = true
	config.CreateBootstrapSA = true
	_, objects, err := chart.RenderClusterManagerChart(context.Background(), config, operatorNamespace)
	if err != nil {
		return fmt.Errorf("render the cluster-manager chart: %w", err)
	}
	var kept [][]byte
	for _, doc := range objects {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return fmt.Errorf("read a rendered object: %w", err)
		}
		if slices.Contains(bootstrapObjects, u.GetKind()+"/"+u.GetName()) {
			kept = append(kept, doc)
		}
	}
	if len(kept) != len(bootstrapObjects) {
		return fmt.Errorf("the cluster-manager chart rendered %d of the %d bootstrap objects %q", len(kept), len(bootstrapObjects), bootstrapObjects)
	}
	return writeDocuments(filepath.Join(outDir, "hub-bootstrap.yaml"), kept)
}

func renderJoin(outDir, clusterName, bootstrapFile, grpcConfigFile, registry, tag, workImage string) error {
	bootstrap, err := os.ReadFile(bootstrapFile)
	if err != nil {
		return fmt.Errorf("read bootstrap kubeconfig: %w", err)
	}
	config := joinConfig(clusterName, string(bootstrap), registry, tag, workImage)
	if grpcConfigFile != "" {
		grpcConfig, err := os.ReadFile(grpcConfigFile)
		if err != nil {
			return fmt.Errorf("read bootstrap gRPC configuration: %w", err)
		}
		config.GRPCConfig = string(grpcConfig)
		config.Klusterlet.RegistrationConfiguration.RegistrationDriver.AuthType = operatorv1.GRPCAuthType
	}
	crds, objects, err := chart.RenderKlusterletChart(context.Background(), config, operatorNamespace)
	if err != nil {
		return fmt.Errorf("render the klusterlet chart: %w", err)
	}
	if err := writeDocuments(filepath.Join(outDir, "crds.yaml"), crds); err != nil {
		return err
	}
	return writeDocuments(filepath.Join(outDir, "klusterlet.yaml"), objects)
}

// joinConfig is the chart configuration clusteradm join v1.2.0 builds (pkg/cmd/join/exec.go, complete and
// applyKlusterlet) with its flags at their defaults: Default mode (not Singleton, the chart's own
// default), the agents in open-cluster-management-agent, default resource requirements, every default
// feature gate listed, a one-year client certificate, no external server URL found in kube-public.
func joinConfig(clusterName, bootstrap, registry, tag, workImage string) *chart.KlusterletChartConfig {
	config := chart.NewDefaultKlusterletChartConfig()
	config.CreateNamespace = true
	config.BootstrapHubKubeConfig = bootstrap
	config.Images = chart.ImagesConfig{
		Registry:         registry,
		Tag:              tag,
		ImageCredentials: chart.ImageCredentials{CreateImageCredentials: true},
		Overrides:        chart.Overrides{WorkImage: workImage},
	}
	config.Klusterlet = chart.KlusterletConfig{
		Create:              true,
		Mode:                operatorv1.InstallModeDefault,
		Name:                "klusterlet",
		ClusterName:         clusterName,
		Namespace:           "open-cluster-management-agent",
		ExternalServerURLs:  []operatorv1.ServerURL{{URL: ""}},
		ResourceRequirement: &operatorv1.ResourceRequirement{Type: operatorv1.ResourceQosClassDefault},
		RegistrationConfiguration: operatorv1.RegistrationConfiguration{
			FeatureGates:                defaultGates(ocmfeature.DefaultSpokeRegistrationFeatureGates),
			ClientCertExpirationSeconds: 31536000,
		},
		WorkConfiguration: operatorv1.WorkAgentConfiguration{
			FeatureGates: defaultGates(ocmfeature.DefaultSpokeWorkFeatureGates),
		},
	}
	return config
}

// defaultGates lists the gates that are on by default, as clusteradm does when no --feature-gates is
// given; sorted so that the output is stable.
func defaultGates(gates map[featuregate.Feature]featuregate.FeatureSpec) []operatorv1.FeatureGate {
	var on []operatorv1.FeatureGate
	for feature, spec := range gates {
		if spec.Default {
			on = append(on, operatorv1.FeatureGate{Feature: string(feature), Mode: operatorv1.FeatureGateModeTypeEnable})
		}
	}
	sort.Slice(on, func(i, j int) bool { return on[i].Feature < on[j].Feature })
	return on
}

func writeDocuments(path string, docs [][]byte) error {
	var out bytes.Buffer
	for _, doc := range docs {
		out.WriteString("---\n")
		out.Write(bytes.TrimSpace(doc))
		out.WriteString("\n")
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
