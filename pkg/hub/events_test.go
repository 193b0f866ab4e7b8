package hub

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// An event about thousands of clusters names a few and counts the rest, within the API server's limit.
func TestEventNamesSomeClustersAndCountsTheRest(t *testing.T) {
	var clusters []string
	for i := range 5000 {
		clusters = append(clusters, fmt.Sprintf("cluster-%04d", i))
	}
	msg := "created ManifestWork default.app on " + someOf(clusters, maxEventNote/2)
	if len(msg) > maxEventNote {
		t.Errorf("note of %d bytes, over the API server's %d", len(msg), maxEventNote)
	}
	if !strings.HasPrefix(msg, "created ManifestWork default.app on cluster-0000, cluster-0001") || !strings.Contains(msg, " more") {
		t.Errorf("note %q: want the first clusters named and the rest counted", msg)
	}
	named := strings.Count(msg, "cluster-")
	if want := fmt.Sprintf(" and %d more", 5000-named); !strings.HasSuffix(msg, want) {
		t.Errorf("note %q: want it to end with %q", msg, want)
	}
	if got := someOf([]string{"a", "b"}, 100); got != "a, b" {
		t.Errorf("two clusters: %q, want %q", got, "a, b")
	}
}

// A condition message too long for an event is cut at a character boundary, and says so.
func TestEventNoteIsCutWithinTheLimit(t *testing.T) {
	long := strings.Repeat("ü", 2000) // two bytes each
	note := eventNote(long)
	if len(note) > maxEventNote || !utf8.ValidString(note) || !strings.Contains(note, "cut") {
		t.Errorf("note of %d bytes (valid UTF-8: %t): want at most %d, valid, saying it was cut", len(note), utf8.ValidString(note), maxEventNote)
	}
	if short := "delivered to 2 clusters"; eventNote(short) != short {
		t.Errorf("a short message was changed: %q", eventNote(short))
	}
}
