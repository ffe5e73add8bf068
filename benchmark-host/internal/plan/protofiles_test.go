package plan

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
)

const counterProto = `syntax = "proto3";
package counter.v1;
import "google/protobuf/timestamp.proto";
import "counter/v1/key.proto";
message HitRequest { Key key = 1; google.protobuf.Timestamp at = 2; }
message HitReply { int64 count = 1; }
service Counter { rpc Hit(HitRequest) returns (HitReply); }
`

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func grpcPlan(t *testing.T, dir, extra string) (*Plan, error) {
	js := `{"targets":{"champion":"http://127.0.0.1:8001","challenger":"http://127.0.0.1:8002"},"rate":100,"slice_seconds":1,"pairs":1,"protocol":"grpc",` +
		`"requests":[{"grpc":{"method":"counter.v1.Counter/Hit","message":{"at":"2026-01-01T00:00:00Z"}}}]` + extra + `}`
	if err := os.WriteFile(filepath.Join(dir, "plan.json"), []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(filepath.Join(dir, "plan.json"))
}

// .proto files as a team keeps them: under an import path, importing each other and Google's
// well-known types, compiled into the descriptors the generator encodes with.
func TestProtoFilesCompileWithTheirImports(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"api/counter/v1/counter.proto": counterProto,
		"api/counter/v1/key.proto":     "syntax = \"proto3\";\npackage counter.v1;\nmessage Key { string name = 1; }\n",
	})
	p, err := grpcPlan(t, dir, `,"proto_files":["counter/v1/counter.proto"],"proto_import_paths":["api"]`)
	if err != nil {
		t.Fatal(err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(p.DescriptorSets[0], &set); err != nil {
		t.Fatal(err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		t.Fatalf("the set does not stand alone: %v", err)
	}
	if _, err := files.FindDescriptorByName("counter.v1.Counter.Hit"); err != nil {
		t.Error(err)
	}
	var names []string
	for _, f := range set.File {
		names = append(names, f.GetName())
	}
	if got := strings.Join(names, " "); got != "google/protobuf/timestamp.proto counter/v1/key.proto counter/v1/counter.proto" {
		t.Errorf("files in import order: %s", got)
	}
}

// A .proto that does not compile is named with its line; paths stay inside the build.
func TestBadProtoFilesNameTheFileAndLine(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"counter.proto": "syntax = \"proto3\";\npackage c;\nmessage A {\n  int64 count = 1\n}\n",
		"imports.proto": "syntax = \"proto3\";\npackage c;\nimport \"missing/thing.proto\";\n",
		"types.proto":   "syntax = \"proto3\";\npackage c;\nmessage A { Nope n = 1; }\n",
	})
	for _, c := range []struct{ extra, want string }{
		{`,"proto_files":["counter.proto"]`, "plan: proto_files: counter.proto:5:1: syntax error: expecting ';'"},
		{`,"proto_files":["imports.proto"]`, `plan: proto_files: imports.proto:3:8: `},
		{`,"proto_files":["types.proto"]`, `plan: proto_files: types.proto:3:13: field c.A.n: unknown type Nope`},
		{`,"proto_files":["absent.proto"]`, `plan: proto_files: `},
		{`,"proto_files":["../etc/x.proto"]`, `plan: proto_files[0]: must be a relative path inside the build (each arm's release), got "../etc/x.proto"`},
		{`,"proto_files":["/etc/x.proto"]`, `plan: proto_files[0]: must be a relative path inside the build`},
		{`,"proto_files":["counter.txt"]`, `plan: proto_files[0]: must name a .proto file`},
		{`,"proto_files":["counter.proto"],"proto_import_paths":["../.."]`, `plan: proto_import_paths[0]: must be a relative path inside the build`},
		{`,"proto_import_paths":["api"]`, `plan: proto_import_paths: only with proto_files`},
		{`,"proto_files":["counter.proto"],"proto_descriptor_set":"set.pb"`, `plan: proto_files: give proto_files or proto_descriptor_set, not both`},
	} {
		_, err := grpcPlan(t, dir, c.extra)
		t.Logf("%s: %v", c.extra, err)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v; want %s…", c.extra, err, c.want)
		}
	}
	// A link out of the build is not followed on the host: each release is read through os.Root.
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "escape.proto")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	p := &Plan{}
	p.Protocol, p.ProtoFiles = "grpc", []string{"escape.proto"}
	_, err = p.CompileProtoFiles(context.Background(), root.FS())
	t.Logf("a link out of the build: %v", err)
	if err == nil || !strings.Contains(err.Error(), "escape.proto") {
		t.Errorf("a link out of the build: %v", err)
	}
}
