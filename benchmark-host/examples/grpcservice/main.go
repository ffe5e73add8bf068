// Command grpcservice is the example gRPC service the tests deploy: grpc-go serving
// helloworld.Greeter/SayHello with DELAY_US of added delay per call, the standard health
// service and server reflection, on PORT. Built with -tags slow it waits SLOW_EXTRA_US more
// (default 2000), the regression the gate exists to catch.
package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/perf-gate/perf-gate/benchmark-host/examples/grpcservice/greeter"
)

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		fmt.Fprintln(os.Stderr, "grpcservice: PORT is not set")
		os.Exit(2)
	}
	delay := time.Duration(envInt("DELAY_US", 0)+slowExtraUs()) * time.Microsecond
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpcservice:", err)
		os.Exit(1)
	}
	s := grpc.NewServer()
	if err := greeter.Register(s, delay, nil); err != nil {
		fmt.Fprintln(os.Stderr, "grpcservice:", err)
		os.Exit(1)
	}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
		s.Stop()
	}()
	fmt.Fprintf(os.Stderr, "grpcservice (%s) on :%s, delay %v\n", variant, port, delay)
	if err := s.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "grpcservice:", err)
		os.Exit(1)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}
