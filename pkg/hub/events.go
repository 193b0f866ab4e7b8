package hub

import (
	"fmt"
	"strings"
)

// maxEventNote is the longest note the API server accepts on an event; a longer one is rejected and
// the event lost.
const maxEventNote = 1024

// eventNote fits msg into an event's note, cutting it (at a character boundary) with a mark that says
// so; the whole message stays on the AppConfig's condition.
func eventNote(msg string) string {
	return cutMessage(msg, maxEventNote, "… (cut; the AppConfig's Ready condition has all of it)")
}

// someOf names the first of names that fit in about budget bytes and counts the rest: an event about
// a change on thousands of clusters stays readable and within maxEventNote.
func someOf(names []string, budget int) string {
	var b strings.Builder
	for i, n := range names {
		rest := len(names) - i
		if i > 0 && b.Len()+len(n)+2 > budget {
			fmt.Fprintf(&b, " and %d more", rest)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n)
	}
	return b.String()
}
