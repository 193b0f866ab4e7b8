package gobuild

import (
	"debug/elf"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A binary built by Command is static and has no symbol table, as the images' are.
func TestCommandBuildsAStaticStrippedBinary(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/hello\n\ngo 1.25\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// net would link libc's resolver with cgo on.
	src := "package main\n\nimport \"net\"\n\nfunc main() { _, _ = net.LookupHost(\"localhost\") }\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hello")
	if output, err := Command(t.Context(), dir, out, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, output)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if libs, _ := f.ImportedLibraries(); len(libs) != 0 {
		t.Errorf("binary links %q, want a static binary", libs)
	}
	if slices.ContainsFunc(f.Sections, func(s *elf.Section) bool { return s.Name == ".symtab" }) {
		t.Error("binary has a symbol table, want it stripped (-s)")
	}
}
