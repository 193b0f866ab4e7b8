package deployrunner

import (
	"net"
	"strconv"
	"testing"
)

// Ports handed out are distinct, free, and below the ephemeral range, where no outgoing connection
// takes them between a process's kill and its restart.
func TestFreeLoopbackAddressesAreBelowTheEphemeralRange(t *testing.T) {
	addrs, err := FreeLoopbackAddresses(5)
	if err != nil {
		t.Fatal(err)
	}
	low := ephemeralLow()
	seen := map[string]bool{}
	for _, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(port)
		if host != "127.0.0.1" || p < 1024 || p >= low || seen[port] {
			t.Errorf("address %s: want 127.0.0.1, a port in 1024-%d, each once (got %v)", a, low-1, addrs)
		}
		seen[port] = true
		ln, err := net.Listen("tcp", a)
		if err != nil {
			t.Errorf("address %s is not free once returned: %v", a, err)
			continue
		}
		ln.Close()
	}
}
