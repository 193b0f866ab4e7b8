// Package kind holds the kind path of Ferry's end-to-end suite: e2e.sh creates a kind hub and two kind
// managed clusters, loads the images of `make images`, installs deploy/hub and deploy/agent/spoke,
// registers the spokes with `ferry-hub clusters add` and runs test/e2e against them (README.md says
// how). Machines without Docker cannot run it, so script_test.go runs it in its dry-run mode against
// local API servers of internal/testing/localcluster — every manifest applied with a server-side dry run, the
// registration for real — and shellchecks every script under hack/ and deploy/.
package kind
