package fieldpath

import (
	"fmt"
	"strconv"
	"strings"
)

// step is one step of a field path: a map key, or a list index when index >= 0.
type step struct {
	key   string
	index int
}

// parse reads the field paths Component parameters use, e.g.
// "spec.template.spec.containers[0].image" or "metadata.labels[app.oam.dev/tier]".
func parse(path string) ([]step, error) {
	var steps []step
	rest := strings.TrimPrefix(path, ".")
	for rest != "" {
		switch rest[0] {
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, fmt.Errorf("field path %q: unclosed [", path)
			}
			inner := rest[1:end]
			if i, err := strconv.Atoi(inner); err == nil && i >= 0 {
				steps = append(steps, step{index: i})
			} else if inner != "" {
				steps = append(steps, step{key: strings.Trim(inner, `"'`), index: -1})
			} else {
				return nil, fmt.Errorf("field path %q: empty []", path)
			}
			rest = strings.TrimPrefix(rest[end+1:], ".")
		default:
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			steps = append(steps, step{key: rest[:end], index: -1})
			rest = strings.TrimPrefix(rest[end:], ".")
		}
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("field path %q is empty", path)
	}
	return steps, nil
}

// Set sets value at path in obj, creating the maps on the way; list elements must exist
// (a parameter sets a field of a container the workload declares, it does not invent one).
func Set(obj map[string]any, path string, value any) error {
	steps, err := parse(path)
	if err != nil {
		return err
	}
	var cur any = obj
	for i, step := range steps {
		last := i == len(steps)-1
		switch node := cur.(type) {
		case map[string]any:
			if step.index >= 0 {
				return fmt.Errorf("field path %q: %s is an object, not a list", path, describeSteps(steps[:i]))
			}
			if last {
				node[step.key] = value
				return nil
			}
			next, ok := node[step.key]
			if !ok || next == nil {
				if steps[i+1].index >= 0 {
					return fmt.Errorf("field path %q: there is no list %s", path, describeSteps(steps[:i+1]))
				}
				next = map[string]any{}
				node[step.key] = next
			}
			cur = next
		case []any:
			if step.index < 0 {
				return fmt.Errorf("field path %q: %s is a list, not an object", path, describeSteps(steps[:i]))
			}
			if step.index >= len(node) {
				return fmt.Errorf("field path %q: %s has %d elements", path, describeSteps(steps[:i]), len(node))
			}
			if last {
				node[step.index] = value
				return nil
			}
			cur = node[step.index]
		default:
			return fmt.Errorf("field path %q: %s is a %T, not an object or a list", path, describeSteps(steps[:i]), cur)
		}
	}
	return nil
}

func describeSteps(steps []step) string {
	var b strings.Builder
	for _, s := range steps {
		if s.index >= 0 {
			fmt.Fprintf(&b, "[%d]", s.index)
		} else {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.key)
		}
	}
	if b.Len() == 0 {
		return "the workload"
	}
	return b.String()
}
