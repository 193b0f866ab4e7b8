package agent

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// An error too long for an Event is cut at a character boundary, within the limit, and says so.
func TestEventMessageIsCutWithinTheLimit(t *testing.T) {
	long := "ManifestWork web: " + strings.Repeat("ü", 2000) // two bytes each
	msg := eventMessage(long)
	if len(msg) > maxEventMessage || !utf8.ValidString(msg) || !strings.HasPrefix(msg, "ManifestWork web: ü") || !strings.Contains(msg, "cut") {
		t.Errorf("message of %d bytes (valid UTF-8: %t): want at most %d, valid, the start kept, saying it was cut", len(msg), utf8.ValidString(msg), maxEventMessage)
	}
	if short := "ManifestWork web: refused"; eventMessage(short) != short {
		t.Errorf("a short message was changed: %q", eventMessage(short))
	}
}
