package main

import (
	"runtime/debug"
	"testing"
)

func TestGCPercentDefaultsTo50UnlessGOGCIsSet(t *testing.T) {
	restore := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(restore) })

	setGCPercent(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("without GOGC the GC percent is %d, want %d", got, defaultGCPercent)
	}
	// An operator's GOGC wins: the runtime applied it at start, and the agent leaves it.
	setGCPercent(func(k string) string {
		if k == "GOGC" {
			return "200"
		}
		return ""
	})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set the agent changed the GC percent to %d", got)
	}
}
