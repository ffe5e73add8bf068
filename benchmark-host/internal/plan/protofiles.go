package plan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// checkProtoFiles checks a plan's proto_files and proto_import_paths: a grpc plan's, instead
// of a proto_descriptor_set, each a relative path inside the build.
func (p *Plan) checkProtoFiles() error {
	switch {
	case len(p.ProtoImportPaths) > 0 && len(p.ProtoFiles) == 0:
		return fieldErr("proto_import_paths", "only with proto_files, which it finds them in")
	case len(p.ProtoFiles) == 0:
		return nil
	case p.Protocol != "grpc":
		return fieldErr("proto_files", "only a grpc plan describes its methods (protocol is %q)", p.Protocol)
	case p.ProtoDescriptorSet != "":
		return fieldErr("proto_files", "give proto_files or proto_descriptor_set, not both")
	}
	for i, f := range p.ProtoFiles {
		if err := CheckBuildPath(f); err != nil {
			return fieldErr(fmt.Sprintf("proto_files[%d]", i), "%v", err)
		}
		if !strings.HasSuffix(f, ".proto") {
			return fieldErr(fmt.Sprintf("proto_files[%d]", i), "must name a .proto file, got %q", f)
		}
	}
	for i, d := range p.ProtoImportPaths {
		if err := CheckBuildPath(d); err != nil {
			return fieldErr(fmt.Sprintf("proto_import_paths[%d]", i), "%v", err)
		}
	}
	return nil
}

// CheckBuildPath refuses a path that is not relative and inside the build.
func CheckBuildPath(p string) error {
	if p == "" || filepath.IsAbs(p) || !filepath.IsLocal(p) {
		return fmt.Errorf("must be a relative path inside the build (each arm's release), got %q", p)
	}
	return nil
}

// Described reports whether the plan describes its gRPC methods itself (proto_descriptor_set
// or proto_files) rather than leaving them to server reflection.
func (p *Plan) Described() bool { return p.ProtoDescriptorSet != "" || len(p.ProtoFiles) > 0 }

// CompileProtoFiles compiles the plan's proto_files as found in fsys (a build) into a
// FileDescriptorSet with every import, Google's well-known types included. Each file is named
// relative to one of the import paths (the build's root when none is given), as protoc takes
// them; an error names the file and line.
func (p *Plan) CompileProtoFiles(ctx context.Context, fsys fs.FS) ([]byte, error) {
	imports := p.ProtoImportPaths
	if len(imports) == 0 {
		imports = []string{"."}
	}
	compiler := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			ImportPaths: imports,
			Accessor: func(name string) (io.ReadCloser, error) {
				return fsys.Open(path.Clean(filepath.ToSlash(name)))
			},
		}),
	}
	files, err := compiler.Compile(ctx, p.ProtoFiles...)
	if err != nil {
		var notFound *fs.PathError
		if errors.As(err, &notFound) {
			return nil, fieldErr("proto_files", "%v (looked in proto_import_paths %q)", err, imports)
		}
		return nil, fieldErr("proto_files", "%v", err)
	}
	var set descriptorpb.FileDescriptorSet
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) { // imports first, as protoc --include_imports writes them
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		for i := range fd.Imports().Len() {
			add(fd.Imports().Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
	}
	for _, f := range files {
		add(f)
	}
	return proto.Marshal(&set)
}
