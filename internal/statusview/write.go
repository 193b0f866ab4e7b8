package statusview

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// Output formats of Write: a table for people, or the data model as it is for scripts.
const (
	FormatTable = ""
	FormatJSON  = "json"
	FormatYAML  = "yaml"
)

// View is what Write prints: a Work, an AppConfig, Clusters, a Rollout, a RolloutHistory, FleetWorks or
// FleetDrift.
type View interface {
	writeTable(w io.Writer) error
}

// CheckFormat says whether Write knows format, naming the ones it does when it does not.
func CheckFormat(format string) error {
	switch format {
	case FormatTable, FormatJSON, FormatYAML:
		return nil
	}
	return fmt.Errorf("output format %q: want json or yaml (or nothing, for a table)", format)
}

// Write prints v to w in format. JSON is indented and ends with a newline, so that successive views
// form a stream `jq` reads; YAML documents carry no separator, which the caller adds between them.
func Write(w io.Writer, format string, v View) error {
	var data []byte
	var err error
	switch format {
	case FormatTable:
		return v.writeTable(w)
	case FormatJSON:
		if data, err = json.MarshalIndent(v, "", "  "); err == nil {
			data = append(data, '\n')
		}
	case FormatYAML:
		data, err = yaml.Marshal(v)
	default:
		return CheckFormat(format)
	}
	if err != nil {
		return fmt.Errorf("encode the status as %s: %w", format, err)
	}
	_, err = w.Write(data)
	return err
}
