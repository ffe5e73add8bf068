// Command counterservice is the example gRPC service with a store of its own that the tests
// deploy with service.dependencies: counter.v1.Counter/Hit adds one to a key in the Redis at
// REDIS_URL (host:port) and answers the count. It reads its gRPC port from GRPC_PORT (the
// gate's service.port_env) and serves /healthcheck over HTTP on PORT, as Envoy's ratelimit
// does; it serves the standard gRPC health service and no reflection, so the gate describes
// its methods from the .proto file the build ships (proto_files). Like ratelimit, it refuses to
// start without its Redis. Built with -tags slow it waits SLOW_EXTRA_US (default 2000) more per
// call.
package main

import (
	"context"
	"embed"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/bufbuild/protocompile"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

//go:embed proto
var protoFS embed.FS

const protoFile = "counter/v1/counter.proto"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "counterservice:", err)
		os.Exit(1)
	}
}

func run() error {
	grpcPort, redisURL := os.Getenv("GRPC_PORT"), os.Getenv("REDIS_URL")
	if grpcPort == "" || redisURL == "" {
		return fmt.Errorf("GRPC_PORT and REDIS_URL must be set (got %q, %q)", grpcPort, redisURL)
	}
	redis := newRedisPool(strings.TrimPrefix(redisURL, "redis://"), 16)
	if _, err := redis.do("PING"); err != nil {
		return fmt.Errorf("no Redis at %s: %w", redisURL, err)
	}
	method, err := counterMethod()
	if err != nil {
		return err
	}
	delay := time.Duration(slowExtraUs()) * time.Microsecond
	ln, err := net.Listen("tcp", "127.0.0.1:"+grpcPort)
	if err != nil {
		return err
	}
	s := grpc.NewServer()
	in, out := method.Input(), method.Output()
	handler := func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		req := dynamicpb.NewMessage(in)
		if err := dec(req); err != nil {
			return nil, err
		}
		if delay > 0 {
			time.Sleep(delay)
		}
		n, err := redis.incr(req.Get(in.Fields().ByName("key")).String())
		if err != nil {
			return nil, status.Error(codes.Unavailable, err.Error())
		}
		reply := dynamicpb.NewMessage(out)
		reply.Set(out.Fields().ByName("count"), protoreflect.ValueOfInt64(n))
		return reply, nil
	}
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: string(method.Parent().FullName()),
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{{MethodName: string(method.Name()), Handler: handler}},
		Metadata:    protoFile,
	}, struct{}{})
	healthpb.RegisterHealthServer(s, health.NewServer())
	if port := os.Getenv("PORT"); port != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/healthcheck", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "OK") })
		hl, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			return err
		}
		go http.Serve(hl, mux)
	}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
		s.Stop()
	}()
	fmt.Fprintf(os.Stderr, "counterservice (%s) on :%s (http :%s), redis %s\n", variant, grpcPort, os.Getenv("PORT"), redisURL)
	return s.Serve(ln)
}

// counterMethod compiles the embedded .proto (the same file the build ships) into Counter/Hit.
func counterMethod() (protoreflect.MethodDescriptor, error) {
	compiler := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: func(name string) (io.ReadCloser, error) {
			return protoFS.Open("proto/" + name)
		},
	})}
	files, err := compiler.Compile(context.Background(), protoFile)
	if err != nil {
		return nil, err
	}
	return files[0].Services().ByName("Counter").Methods().ByName("Hit"), nil
}
