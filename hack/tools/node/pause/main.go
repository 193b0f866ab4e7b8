// Command pause is the process of a pod sandbox: the containers of a pod share its namespaces, and it
// holds them open until the sandbox is stopped. It is containerd's sandbox image in Ferry's local
// clusters with a real node, built from source so that no image is ever pulled.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	// As PID 1 of the pod's PID namespace (when the pod shares one) it would also have to reap orphans;
	// SIGCHLD ignored lets the kernel do that.
	signal.Ignore(syscall.SIGCHLD)
	<-signals
}
