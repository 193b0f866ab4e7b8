package localcluster

import (
	"fmt"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// AddUser provisions a user of the cluster's API server, authenticated by a client certificate that
// the cluster's test certificate authority signs, and returns a client configuration for it (with the
// certificate and key inline). The user belongs to groups and to system:authenticated, and has no
// other permissions until a test grants them.
func (c *Cluster) AddUser(name string, groups []string) (*rest.Config, error) {
	u, err := c.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return nil, fmt.Errorf("add user %s to %s: %w", name, c.Name, err)
	}
	return u.Config(), nil
}
