package deployrunner

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Override sets one flag of a container's args to a value of this machine's. An Override is for what
// a process on this machine cannot take from the pod: a bind address on a host every process shares,
// a kubeconfig in place of the in-cluster configuration, a local directory in place of a mounted
// Secret. Keep the list short: every Override is a place where local runs differ from what ships.
type Override struct {
	// Flag is the flag's name without dashes: "metrics-bind-address".
	Flag string
	// Value replaces the flag's value.
	Value string
	// Add appends the flag when the args do not carry it. Without it a missing flag is an error, so
	// that a flag renamed or removed in deploy/ fails loudly instead of being run under its old name.
	Add bool
}

// Set overrides a flag the Deployment carries.
func Set(flag, value string) Override { return Override{Flag: flag, Value: value} }

// Add sets a flag the Deployment may lack, because a pod gets the same from its environment (an
// in-cluster configuration instead of --kubeconfig).
func Add(flag, value string) Override { return Override{Flag: flag, Value: value, Add: true} }

// ApplyOverrides returns args with every override applied: each occurrence of the flag, written
// --flag=value or as a bare --flag (a boolean), becomes --flag=<override>; a flag the args lack is
// appended when the override says Add, and an error otherwise. A flag written as "--flag value"
// (two arguments) is an error: without the binary's flag types it cannot be told from a boolean
// followed by a positional argument, so deploy/ writes --flag=value.
func ApplyOverrides(args []string, overrides []Override) ([]string, error) {
	out := slices.Clone(args)
	seen := map[string]bool{}
	var errs []error
	for _, o := range overrides {
		if o.Flag == "" || strings.HasPrefix(o.Flag, "-") || strings.Contains(o.Flag, "=") {
			errs = append(errs, fmt.Errorf("override %q: want a flag name without dashes or value", o.Flag))
			continue
		}
		if seen[o.Flag] {
			errs = append(errs, fmt.Errorf("override of --%s given twice", o.Flag))
			continue
		}
		seen[o.Flag] = true
		found := false
		for i := 0; i < len(out); i++ {
			if out[i] == "--" {
				break // what follows is positional
			}
			name, hasValue, ok := flagName(out[i])
			if !ok || name != o.Flag {
				continue
			}
			found = true
			if !hasValue && i+1 < len(out) && !strings.HasPrefix(out[i+1], "-") {
				errs = append(errs, fmt.Errorf("override of --%s: the args give its value %q as a separate argument; write --%s=%s", o.Flag, out[i+1], o.Flag, out[i+1]))
				continue
			}
			out[i] = "--" + o.Flag + "=" + o.Value
		}
		if found {
			continue
		}
		if !o.Add {
			errs = append(errs, fmt.Errorf("override of --%s: the args %q do not carry it (renamed or removed in deploy/?)", o.Flag, args))
			continue
		}
		out = append(out, "--"+o.Flag+"="+o.Value)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// flagName returns the name of the flag arg sets ("-v=2", "--leader-elect", "--x=y") and whether arg
// carries its value after "=".
func flagName(arg string) (name string, hasValue, ok bool) {
	if !strings.HasPrefix(arg, "-") || arg == "-" {
		return "", false, false
	}
	name = strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-")
	name, _, hasValue = strings.Cut(name, "=")
	return name, hasValue, name != ""
}
