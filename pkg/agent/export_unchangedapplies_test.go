package agent

import dto "github.com/prometheus/client_model/go"

// SettledApplies is how many manifest applies all agents of this process answered from their settled
// record, without a request (the tests of a package run one after another: the count moves for the
// running test's agent only).
func SettledApplies() int64 {
	var m dto.Metric
	if err := settledApplies.Write(&m); err != nil {
		panic(err)
	}
	return int64(m.GetCounter().GetValue())
}
