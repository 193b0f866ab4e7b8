package localcluster

import (
	"errors"
	"slices"
	"testing"
)

// BeforeStop functions run at Stop, last registered first, and their errors are Stop's; an
// environment that was never started is no error.
func TestSharedRunsBeforeStopFunctionsInReverse(t *testing.T) {
	s := &Shared{}
	var order []int
	boom := errors.New("boom")
	s.BeforeStop(func() error { order = append(order, 1); return nil })
	s.BeforeStop(func() error { order = append(order, 2); return boom })
	if err := s.Stop(); !errors.Is(err, boom) {
		t.Errorf("Stop = %v, want the BeforeStop error", err)
	}
	if !slices.Equal(order, []int{2, 1}) {
		t.Errorf("order = %v, want [2 1]", order)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("second Stop = %v, want nil (each function runs once)", err)
	}
	if len(order) != 2 {
		t.Errorf("functions ran %d times in all, want 2", len(order))
	}
}
