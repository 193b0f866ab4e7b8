package deployrunner

import (
	"fmt"
	"net"
)

// LoopbackServers moves the health and metrics servers of a Deployment's container
// (--health-probe-bind-address, --metrics-bind-address, which every Ferry binary ships with) to free
// loopback ports, and returns those overrides and the two addresses. Loopback, because every process
// of a local run shares this host, where a pod's ":8081" would clash and be reachable from outside.
func LoopbackServers() (overrides []Override, health, metrics string, err error) {
	addrs, err := FreeLoopbackAddresses(2)
	if err != nil {
		return nil, "", "", err
	}
	health, metrics = addrs[0], addrs[1]
	return []Override{
		Set("health-probe-bind-address", health),
		Set("metrics-bind-address", metrics),
	}, health, metrics, nil
}

// FreeLoopbackAddresses returns n addresses of 127.0.0.1 with different ports nothing listens on now:
// all n are held open until each is known, so that two never get the same port.
func FreeLoopbackAddresses(n int) ([]string, error) {
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer ln.Close()
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}
