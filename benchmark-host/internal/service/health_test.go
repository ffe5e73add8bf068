package service

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// health_check grpc asks grpc-go's standard health service; NOT_SERVING, or a server that
// speaks no gRPC, is not healthy, and the error says where it looked and what it met.
func TestGRPCHealthCheck(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(s, hs)
	go s.Serve(ln)
	defer s.Stop()
	port := ln.Addr().(*net.TCPAddr).Port
	check := Health{Check: contract.HealthGRPC}
	if err := WaitHealthy(context.Background(), port, check, 5*time.Second, nil); err != nil {
		t.Fatalf("a SERVING server: %v", err)
	}
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	err = WaitHealthy(context.Background(), port, check, 300*time.Millisecond, nil)
	if err == nil || !strings.Contains(err.Error(), "grpc.health.v1.Health/Check") || !strings.Contains(err.Error(), "NOT_SERVING") {
		t.Errorf("a NOT_SERVING server: want an error naming the check and NOT_SERVING, got %v", err)
	}

	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer web.Close()
	webPort := web.Listener.Addr().(*net.TCPAddr).Port
	if err := WaitHealthy(context.Background(), webPort, check, 300*time.Millisecond, nil); err == nil {
		t.Error("an HTTP/1.1 server passed the gRPC health check")
	}
	if err := WaitHealthy(context.Background(), webPort, Health{Check: contract.HealthHTTP, Path: "/health"}, time.Second, nil); err != nil {
		t.Errorf("health_check http: %v", err)
	}
}

func TestValidateHealthCheck(t *testing.T) {
	s := contract.ServiceSpec{Command: []string{"./x"}}
	if err := Validate(&s); err != nil || s.HealthCheck != contract.HealthHTTP {
		t.Fatalf("default: %v, %q", err, s.HealthCheck)
	}
	s = contract.ServiceSpec{Command: []string{"./x"}, HealthCheck: "tcp"}
	if err := Validate(&s); err == nil || !strings.Contains(err.Error(), "service.health_check") {
		t.Errorf("want an error naming service.health_check, got %v", err)
	}
}
