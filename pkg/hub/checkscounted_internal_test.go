package hub

import "sync"

// ManifestWorkChecksCounted keeps ferry_hub_manifestwork_checks_total, a counter of the whole test
// process, to one hub while a test counts it: every test running AppConfig passes holds it shared while
// they run (its hubs stopped before it lets go), and a test that counts its own hub's checks holds it
// alone while it counts, the tests on the shared clusters and the others running beside it.
var ManifestWorkChecksCounted sync.RWMutex
