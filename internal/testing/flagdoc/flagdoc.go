package flagdoc

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Table renders the visible flags of fs, in name order, as a Markdown table: flag, default, meaning.
func Table(fs *pflag.FlagSet) string {
	var b strings.Builder
	b.WriteString("| flag | default | what it does |\n|---|---|---|\n")
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		def := f.DefValue
		switch {
		case def == "" || def == "[]" || (f.Value.Type() == "bool" && def == "false"):
			def = ""
		default:
			def = "`" + def + "`"
		}
		name := "`--" + f.Name + "`"
		if f.Shorthand != "" {
			name = "`-" + f.Shorthand + "`, " + name
		}
		usage := strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace(f.Usage)
		fmt.Fprintf(&b, "| %s | %s | %s |\n", name, def, usage)
	})
	return b.String()
}

// CheckREADME fails t unless the README at path holds table between the lines
// "<!-- flags:name -->" and "<!-- /flags:name -->". With FERRY_UPDATE_README=1 it writes the table
// there instead.
func CheckREADME(t testing.TB, path, name, table string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	begin, end := "<!-- flags:"+name+" -->\n", "<!-- /flags:"+name+" -->"
	readme := string(data)
	i, j := strings.Index(readme, begin), strings.Index(readme, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q block for the flags of %s", path, strings.TrimSpace(begin), end, name)
	}
	have := readme[i+len(begin) : j]
	if have == table {
		return
	}
	if os.Getenv("FERRY_UPDATE_README") == "1" {
		if err := os.WriteFile(path, []byte(readme[:i+len(begin)]+table+readme[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the flag table of %s in %s is out of date; run `FERRY_UPDATE_README=1 go test ./cmd/...` and commit README.md. Want:\n%s", name, path, table)
}
