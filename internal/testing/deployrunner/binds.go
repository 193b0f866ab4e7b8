package deployrunner

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
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
// all n are held open until each is known, so that two never get the same port. The ports lie below the
// kernel's range of ephemeral ports, which the outgoing connections of every process here take their
// source ports from: a process killed and started again on its port (the kill tests do so while
// hundreds of connections come and go) finds it still free, where a port of that range was taken in
// between, now and then, on a busy machine.
func FreeLoopbackAddresses(n int) ([]string, error) {
	low := ephemeralLow()
	// Below the ephemeral range, above the well-known ports and the range's own lower neighbours that
	// other services here are likely to use.
	first, last := max(1024, low-16384), low-1
	var addrs []string
	for range n {
		ln, err := listenBetween(first, last)
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer ln.Close()
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

// listenBetween listens on a free port of 127.0.0.1 in [first, last], tried at random.
func listenBetween(first, last int) (net.Listener, error) {
	var err error
	for range 200 {
		var ln net.Listener
		port := first + rand.IntN(last-first+1)
		if ln, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			return ln, nil
		}
	}
	return nil, fmt.Errorf("no free port in %d-%d after 200 tries, the last: %w", first, last, err)
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's ip_local_port_range), 32768
// where it cannot be read.
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 32768
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= 2048 {
		return 32768
	}
	return low
}
