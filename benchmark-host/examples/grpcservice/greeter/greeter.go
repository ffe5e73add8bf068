// Package greeter is a gRPC service built on grpc-go for the tests and the demo: the shape of
// grpc-go's helloworld example (helloworld.Greeter/SayHello, HelloRequest{name} to
// HelloReply{message}), with a known added delay per call, chosen status codes, the standard
// health service and server reflection. Its messages are described at run time (dynamicpb), so
// it needs no generated code; the protocol is grpc-go's.
package greeter

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// File describes helloworld.proto as grpc-go's example has it.
var File = &descriptorpb.FileDescriptorProto{
	Name:    proto.String("examples/helloworld/helloworld/helloworld.proto"),
	Package: proto.String("helloworld"),
	Syntax:  proto.String("proto3"),
	MessageType: []*descriptorpb.DescriptorProto{
		message("HelloRequest", "name"),
		message("HelloReply", "message"),
	},
	Service: []*descriptorpb.ServiceDescriptorProto{{
		Name: proto.String("Greeter"),
		Method: []*descriptorpb.MethodDescriptorProto{{
			Name: proto.String("SayHello"), InputType: proto.String(".helloworld.HelloRequest"),
			OutputType: proto.String(".helloworld.HelloReply"),
		}},
	}},
}

func message(name, field string) *descriptorpb.DescriptorProto {
	return &descriptorpb.DescriptorProto{Name: proto.String(name), Field: []*descriptorpb.FieldDescriptorProto{{
		Name: proto.String(field), JsonName: proto.String(field), Number: proto.Int32(1),
		Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(),
	}}}
}

// Statuses are the names that make SayHello answer with a status instead of a greeting.
var Statuses = map[string]codes.Code{
	"exhausted":   codes.ResourceExhausted,
	"unavailable": codes.Unavailable,
	"invalid":     codes.InvalidArgument,
}

// Register adds the greeter (each call waits delay, then answers), the health service
// (SERVING) and reflection to s. observe, when not nil, is told each call's name and how long
// its wait really lasted (a sleep overshoots, more so on a busy machine).
func Register(s *grpc.Server, delay time.Duration, observe func(name string, slept time.Duration)) error {
	fd, err := protodesc.NewFile(File, nil)
	if err != nil {
		return err
	}
	files := &protoregistry.Files{}
	if err := files.RegisterFile(fd); err != nil {
		return err
	}
	svc := fd.Services().Get(0)
	m := svc.Methods().Get(0)
	in, out := m.Input(), m.Output()
	handler := func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		req := dynamicpb.NewMessage(in)
		if err := dec(req); err != nil {
			return nil, err
		}
		name := req.Get(in.Fields().ByName("name")).String()
		var slept time.Duration
		if delay > 0 {
			start := time.Now()
			time.Sleep(delay)
			slept = time.Since(start)
		}
		if observe != nil {
			observe(name, slept)
		}
		if code, ok := Statuses[strings.SplitN(name, "-", 2)[0]]; ok {
			return nil, status.Error(code, "asked for "+code.String())
		}
		reply := dynamicpb.NewMessage(out)
		reply.Set(out.Fields().ByName("message"), protoreflect.ValueOfString("Hello "+name))
		return reply, nil
	}
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: string(svc.FullName()),
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{{MethodName: string(m.Name()), Handler: handler}},
		Metadata:    File.GetName(),
	}, struct{}{})
	healthpb.RegisterHealthServer(s, health.NewServer())
	reflectionpb.RegisterServerReflectionServer(s, reflection.NewServerV1(reflection.ServerOptions{Services: s, DescriptorResolver: files}))
	return nil
}
