package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/yaml"

	"github.com/ferry-mc/ferry/pkg/registration"
)

// newClustersCommand is `ferry-hub clusters add|remove`: registering managed clusters without OCM's
// registration agent (pkg/registration).
func newClustersCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "clusters",
		Short: "Register managed clusters with this hub, or remove them, without OCM's registration agent",
	}
	cmd.AddCommand(newClustersAddCommand(), newClustersRemoveCommand())
	return cmd
}

type clusterFlags struct {
	kubeconfig, spokeKubeconfig, agentNamespace string
}

func (f *clusterFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "Kubeconfig of a hub administrator. Default: $KUBECONFIG or ~/.kube/config.")
	cmd.Flags().StringVar(&f.spokeKubeconfig, "spoke-kubeconfig", "", "Kubeconfig of the managed cluster, to write (add) or delete (remove) its Secret "+registration.HubKubeconfigSecret+" there.")
	cmd.Flags().StringVar(&f.agentNamespace, "agent-namespace", registration.DefaultAgentNamespace, "Namespace of ferry-agent on the managed cluster, where its Secret "+registration.HubKubeconfigSecret+" goes.")
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	return ctrl.GetConfig()
}

func newClustersAddCommand() *cobra.Command {
	var f clusterFlags
	var o registration.AddOptions
	var caFile, outputDir, output string
	cmd := &cobra.Command{
		Use:   "add NAME",
		Short: "Register a managed cluster and write its agent's hub credential",
		Long: `Register a managed cluster NAME with the hub: the ManagedCluster, its namespace, a ServiceAccount
whose token may do only what deploy/agent/hub-clusterrole.yaml allows in that namespace, and the Lease
its agent renews (ferry-hub then keeps the cluster's JOINED and AVAILABLE columns). The agent's hub
credential, the Secret ` + registration.HubKubeconfigSecret + ` (kubeconfig, cluster-name), goes
straight into the managed cluster (--spoke-kubeconfig), into a directory (--output-dir), or to standard
output as YAML (-o yaml). Running it again changes nothing but labels and lease duration, and writes the
same credential.`,
		Example: `  ferry-hub clusters add cluster1 --kubeconfig hub.kubeconfig --spoke-kubeconfig cluster1.kubeconfig
  kubectl --kubeconfig cluster1.kubeconfig apply -k deploy/agent/spoke`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			destinations := 0
			for _, set := range []bool{outputDir != "", f.spokeKubeconfig != "", output != ""} {
				if set {
					destinations++
				}
			}
			if destinations != 1 {
				return errors.New("say where the agent's hub credential goes: exactly one of --spoke-kubeconfig, --output-dir or -o yaml")
			}
			if output != "" && output != "yaml" {
				return fmt.Errorf("-o %q: only yaml is supported", output)
			}
			if caFile != "" {
				ca, err := os.ReadFile(caFile)
				if err != nil {
					return fmt.Errorf("--hub-ca-file: %w", err)
				}
				o.HubCA = ca
			}
			hub, err := restConfig(f.kubeconfig)
			if err != nil {
				return fmt.Errorf("hub kubeconfig: %w", err)
			}
			var spoke *rest.Config
			if f.spokeKubeconfig != "" {
				// Read before anything is made on the hub, so a wrong path registers nothing.
				if spoke, err = clientcmd.BuildConfigFromFlags("", f.spokeKubeconfig); err != nil {
					return fmt.Errorf("--spoke-kubeconfig: %w", err)
				}
			}
			cred, err := registration.Add(cmd.Context(), hub, o)
			if err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			fmt.Fprintf(stderr, "cluster %s registered: ManagedCluster %s (ManagedClusterSet %s), namespace %s, ServiceAccount %s/%s bound to ClusterRole %s there\n",
				o.Name, o.Name, cred.ClusterSet, o.Name, o.Name, registration.AgentServiceAccount, registration.AgentClusterRole)
			switch {
			case spoke != nil:
				if err := cred.ApplyToSpoke(cmd.Context(), spoke, f.agentNamespace); err != nil {
					return err
				}
				fmt.Fprintf(stderr, "Secret %s/%s written to the managed cluster; install the agent there with `kubectl apply -k deploy/agent/spoke`\n",
					f.agentNamespace, registration.HubKubeconfigSecret)
			case outputDir != "":
				if err := cred.WriteDir(outputDir); err != nil {
					return fmt.Errorf("--output-dir: %w", err)
				}
				fmt.Fprintf(stderr, "hub credential written to %s (run ferry-agent --hub-kubeconfig-dir=%s)\n", outputDir, outputDir)
			default:
				data, err := yaml.Marshal(cred.Secret(f.agentNamespace))
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(data)
				return err
			}
			return nil
		},
	}
	f.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&o.HubServer, "hub-server", "", "The hub's URL as the managed cluster reaches it (for kind: https://<hub>-control-plane:6443). Default: the server of --kubeconfig.")
	fl.StringVar(&caFile, "hub-ca-file", "", "PEM file the agent verifies the hub's serving certificate with. Default: the CA of --kubeconfig, else the hub's root CA.")
	fl.Int32Var(&o.LeaseDurationSeconds, "lease-duration-seconds", registration.DefaultLeaseDurationSeconds,
		fmt.Sprintf("How often the agent renews its Lease; AVAILABLE turns Unknown after %d times this without a renewal.", registration.LeaseGraceTimes))
	fl.StringToStringVar(&o.Labels, "labels", nil, "Labels of the ManagedCluster, for placements that select by label (k=v,k2=v2).")
	fl.StringVar(&o.ClusterSet, "cluster-set", "", "The ManagedClusterSet the cluster joins (label "+clusterv1beta2.ClusterSetLabel+"), made if missing: AppConfigs reach it from the namespaces this set is bound to. Default: "+registration.DefaultClusterSet+" for a new cluster; a registered cluster keeps its set.")
	fl.StringVar(&outputDir, "output-dir", "", "Write the Secret's files (kubeconfig, cluster-name) into this directory, for ferry-agent --hub-kubeconfig-dir.")
	fl.StringVarP(&output, "output", "o", "", "yaml: print the Secret, to pipe into kubectl apply -f - on the managed cluster.")
	return cmd
}

func newClustersRemoveCommand() *cobra.Command {
	var f clusterFlags
	cmd := &cobra.Command{
		Use:   "remove NAME",
		Short: "Undo `clusters add`: the ManagedCluster, its namespace and works, the agent's credential",
		Long: `Remove a cluster that ` + "`ferry-hub clusters add`" + ` registered: its ManagedCluster and its namespace on the hub
(with its ManifestWorks; an agent still running removes what they applied), and so the agent's
ServiceAccount and token. With --spoke-kubeconfig, also the Secret ` + registration.HubKubeconfigSecret + ` on the
managed cluster. A ManagedCluster registered otherwise (e.g. by clusteradm) is refused.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			hub, err := restConfig(f.kubeconfig)
			if err != nil {
				return fmt.Errorf("hub kubeconfig: %w", err)
			}
			if err := registration.Remove(cmd.Context(), hub, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "cluster %s removed from the hub\n", args[0])
			if f.spokeKubeconfig == "" {
				return nil
			}
			spoke, err := clientcmd.BuildConfigFromFlags("", f.spokeKubeconfig)
			if err != nil {
				return fmt.Errorf("--spoke-kubeconfig: %w", err)
			}
			if err := registration.RemoveFromSpoke(cmd.Context(), spoke, f.agentNamespace); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Secret %s/%s deleted from the managed cluster\n", f.agentNamespace, registration.HubKubeconfigSecret)
			return nil
		},
	}
	f.add(cmd)
	return cmd
}
