package loadgen

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/plan"
)

// callWriter turns a grpc plan's requests into protobuf bytes, per arm: each arm's methods
// are described by its own build (its server reflection, or its proto_descriptor_set), so
// a challenger that changed a message is sent messages it understands. A message with no
// placeholder is encoded once; a templated one is expanded as JSON text and encoded through
// protojson and dynamicpb per call.
type callWriter struct {
	plan    *plan.Plan
	seed    uint64
	arms    [2]string
	entries []callEntry
}

type callEntry struct {
	method string // /package.Service/Method
	call   *plan.CompiledCall
	input  [2]protoreflect.MessageDescriptor
	static [2][]byte // nil when the message has a placeholder
	md     metadata.MD
}

func newCallWriter(ctx context.Context, p *plan.Plan, targets [2]endpoint) (*callWriter, error) {
	w := &callWriter{plan: p, seed: uint64(*p.Seed), arms: [2]string{targets[0].arm, targets[1].arm}}
	var files [2]*protoregistry.Files
	for arm := range targets {
		f, err := describe(ctx, p, arm, targets[arm])
		if err != nil {
			return nil, err
		}
		files[arm] = f
	}
	for i, c := range p.Compiled() {
		field := fmt.Sprintf("requests[%d].grpc", i)
		e := callEntry{method: "/" + c.GRPC.Method, call: c.GRPC}
		static := c.GRPC.Message.IsStatic()
		for _, h := range c.GRPC.Metadata {
			static = static && h.Value.IsStatic()
		}
		for arm := range targets {
			in, err := inputOf(files[arm], c.GRPC.Method)
			if err != nil {
				return nil, fmt.Errorf("plan: %s.method: %s (%s): %w", field, armNames[arm], targets[arm].url, err)
			}
			e.input[arm] = in
		}
		w.entries = append(w.entries, e)
		// Every message is encoded once here, so one that does not fit its type fails the
		// plan before any load, naming the field.
		for arm := range targets {
			b, md, err := w.encode(i, &job{arm: arm, slice: -1})
			if err != nil {
				return nil, fmt.Errorf("plan: %s.message: for the %s: %w", field, armNames[arm], err)
			}
			if static {
				w.entries[i].static[arm], w.entries[i].md = b, md
			}
		}
	}
	return w, nil
}

// encode returns the message and metadata of one call.
func (w *callWriter) encode(entry int, j *job) ([]byte, metadata.MD, error) {
	e := &w.entries[entry]
	if b := e.static[j.arm]; b != nil {
		return b, e.md, nil
	}
	v := j.vars(w.seed, w.plan.RunID, w.arms[j.arm])
	msg := dynamicpb.NewMessage(e.input[j.arm])
	if err := protojson.Unmarshal(e.call.Message.Append(nil, &v), msg); err != nil {
		return nil, nil, err
	}
	b, err := proto.Marshal(msg)
	if err != nil {
		return nil, nil, err
	}
	var md metadata.MD
	if len(e.call.Metadata) > 0 {
		md = metadata.MD{}
		for _, h := range e.call.Metadata {
			md.Append(h.Name, string(h.Value.Append(nil, &v)))
		}
	}
	return b, md, nil
}

// inputOf finds a unary method's request type.
func inputOf(files *protoregistry.Files, method string) (protoreflect.MessageDescriptor, error) {
	svc, name, _ := strings.Cut(method, "/")
	d, err := files.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil, fmt.Errorf("no service %s", svc)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, fmt.Errorf("%s is not a service", svc)
	}
	md := sd.Methods().ByName(protoreflect.Name(name))
	if md == nil {
		return nil, fmt.Errorf("service %s has no method %s", svc, name)
	}
	if md.IsStreamingClient() || md.IsStreamingServer() {
		return nil, fmt.Errorf("%s is a streaming method; only unary calls are supported", method)
	}
	return md.Input(), nil
}

// describe gives the descriptors of one arm: its build's proto_descriptor_set, else what
// its server reflection serves.
func describe(ctx context.Context, p *plan.Plan, arm int, target endpoint) (*protoregistry.Files, error) {
	if p.Described() {
		var set descriptorpb.FileDescriptorSet
		if err := proto.Unmarshal(p.DescriptorSets[arm], &set); err != nil {
			return nil, fmt.Errorf("plan: proto_descriptor_set: %s: not a protobuf FileDescriptorSet: %v", armNames[arm], err)
		}
		f, err := protodesc.NewFiles(&set)
		if err != nil {
			return nil, fmt.Errorf("plan: proto_descriptor_set: %s: %v (build it with protoc --include_imports --descriptor_set_out)", armNames[arm], err)
		}
		return f, nil
	}
	f, err := reflect(ctx, target.hostPort(), p.Compiled())
	if err != nil {
		return nil, fmt.Errorf("plan: targets.%s: %s: server reflection: %w (or give proto_descriptor_set)", armNames[arm], target.url, err)
	}
	return f, nil
}

// reflect asks a server for the files that define the plan's services, and every file they
// import, through grpc-go's reflection client (v1, else v1alpha for older servers).
func reflect(ctx context.Context, addr string, calls []plan.CompiledRequest) (*protoregistry.Files, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	ask, err := reflectionStream(ctx, cc)
	if err != nil {
		return nil, err
	}
	files := map[string]*descriptorpb.FileDescriptorProto{}
	var want []*reflectionv1.ServerReflectionRequest
	for _, c := range calls {
		svc, _, _ := strings.Cut(c.GRPC.Method, "/")
		want = append(want, &reflectionv1.ServerReflectionRequest{
			MessageRequest: &reflectionv1.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: svc}})
	}
	for len(want) > 0 {
		req := want[0]
		want = want[1:]
		got, err := ask(req)
		if err != nil {
			return nil, err
		}
		for _, raw := range got {
			fd := &descriptorpb.FileDescriptorProto{}
			if err := proto.Unmarshal(raw, fd); err != nil {
				return nil, err
			}
			if files[fd.GetName()] != nil {
				continue
			}
			files[fd.GetName()] = fd
			for _, dep := range fd.GetDependency() {
				if files[dep] == nil {
					want = append(want, &reflectionv1.ServerReflectionRequest{
						MessageRequest: &reflectionv1.ServerReflectionRequest_FileByFilename{FileByFilename: dep}})
				}
			}
		}
	}
	set := &descriptorpb.FileDescriptorSet{}
	for _, fd := range files {
		set.File = append(set.File, fd)
	}
	return protodesc.NewFiles(set)
}

// reflectionStream opens a reflection stream, v1 or else v1alpha, and returns a function that
// asks one question and returns the encoded files of the answer.
func reflectionStream(ctx context.Context, cc *grpc.ClientConn) (func(*reflectionv1.ServerReflectionRequest) ([][]byte, error), error) {
	v1, err := reflectionv1.NewServerReflectionClient(cc).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, err
	}
	ask := func(r *reflectionv1.ServerReflectionRequest) ([][]byte, error) {
		if err := v1.Send(r); err != nil {
			return nil, err
		}
		resp, err := v1.Recv()
		if err != nil {
			return nil, err
		}
		if e := resp.GetErrorResponse(); e != nil {
			return nil, fmt.Errorf("%s", e.GetErrorMessage())
		}
		return resp.GetFileDescriptorResponse().GetFileDescriptorProto(), nil
	}
	probe := &reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{ListServices: "*"}}
	if err := v1.Send(probe); err == nil {
		if _, err = v1.Recv(); err == nil {
			return ask, nil
		} else if status.Code(err) != codes.Unimplemented {
			return nil, err
		}
	}
	// An older server: v1alpha has the same messages under another name.
	return reflectionV1alpha(ctx, cc)
}
