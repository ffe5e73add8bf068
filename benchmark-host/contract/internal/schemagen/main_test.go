package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// go test catches a stale schema directory too, not only npm test's -check.
func TestCommittedSchemasAreFresh(t *testing.T) {
	files, err := generate("../..")
	if err != nil {
		t.Fatal(err)
	}
	if stale := staleFiles("../../schema", files); len(stale) > 0 {
		t.Errorf("stale: %v; run 'npm run schemas'", stale)
	}
}

func TestCheckNamesChangedMissingAndExtraFiles(t *testing.T) {
	files, err := generate("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := write(dir, files); err != nil {
		t.Fatal(err)
	}
	if stale := staleFiles(dir, files); len(stale) != 0 {
		t.Fatalf("fresh files reported stale: %v", stale)
	}
	os.WriteFile(filepath.Join(dir, "result.schema.json"), []byte("{}\n"), 0o644)
	os.Remove(filepath.Join(dir, "status.schema.json"))
	os.WriteFile(filepath.Join(dir, "gone.schema.json"), []byte("{}\n"), 0o644)
	if got, want := staleFiles(dir, files), []string{"gone.schema.json", "result.schema.json", "status.schema.json"}; !slices.Equal(got, want) {
		t.Errorf("stale files %v, want %v", got, want)
	}
	// Writing again restores the directory exactly, removing what no message needs.
	if err := write(dir, files); err != nil {
		t.Fatal(err)
	}
	if stale := staleFiles(dir, files); len(stale) != 0 {
		t.Errorf("after writing, still stale: %v", stale)
	}
}
