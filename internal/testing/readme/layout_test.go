package readme

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the checkout this package is in.
const root = "../../.."

// Every directory holding Go code is named in the first column of the README's Layout table, so that a
// newcomer finds every room of the house there. A directory is also covered when it sits inside one the
// table names that holds no Go code of its own (hack/tools: modules of their own, listed together).
func TestLayoutNamesEveryDirectoryOfGoCode(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, layout, ok := strings.Cut(string(data), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no Layout section")
	}
	named := map[string]bool{}
	path := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(layout, "\n") {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "|") || len(cells) < 3 {
			continue
		}
		for _, m := range path.FindAllStringSubmatch(cells[1], -1) {
			named[strings.TrimSuffix(m[1], "/")] = true
		}
	}

	withGo := map[string]bool{}
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			switch name := d.Name(); {
			case rel != "." && (strings.HasPrefix(name, ".") || name == "bin" || name == "testdata"):
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") {
			withGo[filepath.ToSlash(filepath.Dir(rel))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for dir := range withGo {
		if named[dir] || coveredByAGroup(dir, named, withGo) {
			continue
		}
		missing = append(missing, dir)
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("the README's Layout table does not name these directories of Go code; add a row for each:\n  %s", strings.Join(missing, "\n  "))
	}
	for dir := range named {
		if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
			t.Errorf("the README's Layout table names %s, which is not in the checkout", dir)
		}
	}
}

// coveredByAGroup reports whether dir is inside a directory the table names that holds no Go code of
// its own.
func coveredByAGroup(dir string, named, withGo map[string]bool) bool {
	for parent := filepath.Dir(dir); parent != "." && parent != "/"; parent = filepath.Dir(parent) {
		if named[parent] && !withGo[parent] {
			return true
		}
	}
	return false
}
