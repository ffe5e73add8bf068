// Command schemagen writes the contract's JSON Schemas: one file per message in
// contract.Messages, with the limits of contract.Limits and the Go doc comments as
// descriptions, and constants.json. With -check it writes nothing and fails, naming every
// stale file, when the committed files differ from what it would write (npm test runs it).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

func main() {
	out := flag.String("out", "schema", "directory of the schema files")
	src := flag.String("src", ".", "directory of the contract package's source (for the doc comments)")
	check := flag.Bool("check", false, "compare with the files in -out instead of writing them")
	flag.Parse()
	files, err := generate(*src)
	if err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(2)
	}
	if *check {
		stale := staleFiles(*out, files)
		for _, name := range stale {
			fmt.Fprintf(os.Stderr, "%s is stale: run 'npm run schemas' and commit the contract's schema directory\n", display(filepath.Join(*out, name)))
		}
		if len(stale) > 0 {
			os.Exit(1)
		}
		fmt.Printf("%s matches the contract\n", display(*out))
		return
	}
	if err := write(*out, files); err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}

// generate renders every file of the schema directory.
func generate(srcDir string) (map[string][]byte, error) {
	docs, err := readDocs(srcDir)
	if err != nil {
		return nil, err
	}
	g := &generator{docs: docs, used: map[string]bool{}}
	files := map[string][]byte{}
	for _, m := range contract.Messages {
		s, err := g.message(m)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name, err)
		}
		files[m.Name+".schema.json"] = encode(s)
	}
	for name := range contract.Limits {
		if !g.used[name] {
			return nil, fmt.Errorf("limit %q is named by no field: remove it from contract.Limits", name)
		}
	}
	files["constants.json"] = encode(contract.Constants)
	return files, nil
}

// staleFiles lists the files that differ from, are missing from, or should not be in dir.
func staleFiles(dir string, files map[string][]byte) []string {
	var stale []string
	for name, want := range files {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(got, want) {
			stale = append(stale, name)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if _, ok := files[e.Name()]; !ok {
			stale = append(stale, e.Name())
		}
	}
	slices.Sort(stale)
	return stale
}

func write(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if _, ok := files[e.Name()]; !ok {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// display names a path from the repository's root, as a user would type it.
func display(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	for dir := filepath.Dir(abs); dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			if rel, err := filepath.Rel(dir, abs); err == nil {
				return rel
			}
		}
	}
	return path
}

// encode is indented JSON with a final newline; HTML characters stay as written.
func encode(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return buf.Bytes()
}
