// Package gobuild builds Ferry's commands the way its images carry them (hack/image, `make images`):
// static (CGO_ENABLED=0), without the build machine's paths or VCS state, without symbol tables. The
// tests that run a binary build it with Command, so that they run what ships and share the image
// build's compiled packages in Go's build cache: a build with other settings compiles every dependency
// once more, minutes of CPU on a cold machine.
//
// Entry point: Command.
package gobuild
