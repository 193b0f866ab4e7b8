package fleetsim

import "k8s.io/client-go/rest"

// FastConfig is a copy of cfg that may send qps requests a second (bursts of burst): client-go's
// default of 5 a second would take over half an hour to register 10,000 clusters. With an
// administrator's cfg (system:masters), API priority and fairness exempts the requests, so the
// simulated fleet does not queue behind the hub it measures.
func FastConfig(cfg *rest.Config, qps float32, burst int) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.QPS, out.Burst = qps, burst
	return out
}
