// Package cloudevents gives ferry-agent the ManifestWorks of its cluster from a cloudevents source
// instead of the hub's kube-apiserver: OCM's gRPC server (driver grpc) or an MQTT broker (driver mqtt,
// as Maestro runs), read from the same configuration files OCM's work agent reads
// (--workload-source-config). The entry point is Connect, which returns a work clientset that the
// agent uses as it uses the hub's: it lists, watches and merge-patches ManifestWorks through it.
//
// The protocol is OCM's sdk-go (the manifestbundles codec, as OCM v1.2.0's work agent uses): a status
// patch is sent to the source as a status update event, other patches (finalizers) stay with the
// agent, and removing the last finalizer of a deleted work tells the source it is gone. The clients
// are assembled here from sdk-go's gRPC and MQTT options rather than through its config loader, which
// links Google Cloud Pub/Sub's client libraries into every binary that uses it.
package cloudevents
