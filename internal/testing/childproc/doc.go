// Package childproc runs a binary as a child process with its output in a log file, the way
// ferry-local and the end-to-end tests run ferry-hub and ferry-agent. The entry point is Start; the
// Process it returns is waited for as a readiness probe would (WaitReady), stopped as a supervisor
// stops a container (Stop, StopAll: SIGTERM, then SIGKILL after a grace period), or killed as a crash
// would kill it and started again with the same command (Kill, Restart).
package childproc
