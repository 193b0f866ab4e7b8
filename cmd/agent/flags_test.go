package main

import (
	"testing"

	"github.com/ferry-mc/ferry/internal/testing/flagdoc"
)

// The README's table of ferry-agent's flags is the command's.
func TestREADMEListsEveryFlag(t *testing.T) {
	flagdoc.CheckREADME(t, "../../README.md", "ferry-agent", flagdoc.Table(newCommand().Flags()))
}
