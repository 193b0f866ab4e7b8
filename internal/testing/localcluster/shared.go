package localcluster

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
)

// Shared is an environment that the tests of one package share: the first test that asks for it
// starts it, and TestMain stops it after the last. Tests that need no cluster (benchmarks of pure
// code, unit tests) then run without one.
type Shared struct {
	Options Options

	once sync.Once
	env  *Environment
	err  error

	mu         sync.Mutex
	beforeStop []func() error
}

// Get returns the environment, starting it on first use; it fails t if it cannot start.
func (s *Shared) Get(t testing.TB) *Environment {
	t.Helper()
	s.once.Do(func() {
		s.env, s.err = Start(context.Background(), s.Options)
	})
	if s.err != nil {
		t.Fatalf("start shared test clusters: %v", s.err)
	}
	return s.env
}

// BeforeStop registers f to run when the environment stops, before its clusters do: for what a
// package runs against the shared clusters for all its tests (agents, controllers), which has to end
// while the clusters still serve. Functions run last registered first; their errors fail the run.
func (s *Shared) BeforeStop(f func() error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.beforeStop = append(s.beforeStop, f)
}

// Stop runs the BeforeStop functions, then stops the environment if it was started.
func (s *Shared) Stop() error {
	s.mu.Lock()
	fs := s.beforeStop
	s.beforeStop = nil
	s.mu.Unlock()
	var errs []error
	for i := len(fs) - 1; i >= 0; i-- {
		errs = append(errs, fs[i]())
	}
	if s.env != nil {
		errs = append(errs, s.env.Stop())
	}
	return errors.Join(errs...)
}

// RunShared is TestMain for a package whose tests share s: it runs the tests, stops s, and returns
// the exit code, failing the run if s did not stop cleanly.
func RunShared(m *testing.M, s *Shared) int {
	code := m.Run()
	if err := s.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop shared test clusters:", err)
		code = 1
	}
	return code
}

// RunManyAtOnce sets go test's -test.parallel to n unless the command line gives it, for TestMain to call
// before m.Run: a package whose tests each wait on clusters (a control plane starting, an outage
// lasting, a lease running out) runs more of them at once than the machine has cores.
func RunManyAtOnce(n int) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			panic(err)
		}
	}
}
