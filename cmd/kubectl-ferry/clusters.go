package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/ferry-mc/ferry/internal/statusview"
)

var managedClusters = clusterv1.SchemeGroupVersion.WithResource("managedclusters")

func newClustersCommand(conn *connection) *cobra.Command {
	var o outputOptions
	cmd := &cobra.Command{
		Use:     "clusters",
		Aliases: []string{"cluster", "managedclusters"},
		Short:   "The managed clusters: joined, available, who registered them, how many ManifestWorks they have",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			clients, err := conn.clients()
			if err != nil {
				return err
			}
			return show(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, clients, clustersView(clients))
		},
	}
	o.addFlags(cmd.Flags(), false)
	return cmd
}

func clustersView(clients *hubClients) view {
	return view{
		what: "the managed clusters",
		load: func(ctx context.Context) (statusview.View, error) {
			clusters, err := clients.clusters.ClusterV1().ManagedClusters().List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, fmt.Errorf("list ManagedClusters: %w", err)
			}
			// Only the works' metadata: counting needs no manifests.
			works, err := clients.metadata.Resource(manifestWorks).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, fmt.Errorf("list ManifestWorks: %w", err)
			}
			perCluster := map[string]int{}
			for _, w := range works.Items {
				perCluster[w.Namespace]++
			}
			return statusview.ForClusters(clusters.Items, perCluster), nil
		},
		watches: []watched{{resource: managedClusters}, {resource: manifestWorks}},
	}
}
