// Package podinstall installs Ferry on a local cluster with a real node the way a user installs it on a
// cluster of their own: the images `make images` builds, imported into the node under the tags deploy/
// runs; `kubectl apply -k deploy/hub`; `ferry-hub clusters add`; `kubectl apply -k deploy/agent/spoke`
// — nothing overridden. The real-node tests (test/node) and `ferry-local up --real-node` (`make
// demo-node`) both install with it. Entry points: BuildImages, then Installer's methods in the order
// a user runs them (ImportImages, InstallHub, Register, InstallAgent).
package podinstall
