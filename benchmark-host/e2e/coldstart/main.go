// Command coldstart is a test service that is slow for its first seconds of serving, as a
// JIT-compiled or cache-warming service is: each of its first COLD_REQUESTS requests to /work
// (default 3000) waits an extra COLD_MS (default 20) milliseconds scaled down linearly to none,
// so it warms by the work it does, not by the clock. A champion that has served earlier runs is
// warm and a new challenger cold; started the same way for every run, both are equally cold
// (issue 14).
package main

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		fmt.Fprintln(os.Stderr, "coldstart: PORT is not set")
		os.Exit(2)
	}
	coldRequests := envFloat("COLD_REQUESTS", 3000)
	coldMs := envFloat("COLD_MS", 20)
	version, _ := os.ReadFile("VERSION")
	var served atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "coldstart %s\n", strings.TrimSpace(string(version)))
	})
	mux.HandleFunc("/work", func(w http.ResponseWriter, r *http.Request) {
		n := float64(served.Add(1))
		if n < coldRequests {
			time.Sleep(time.Duration(coldMs * (1 - n/coldRequests) * float64(time.Millisecond)))
		}
		fmt.Fprintf(w, "%d\n", int64(n))
	})
	fmt.Printf("coldstart listening on 127.0.0.1:%s, cold for %g requests\n", port, coldRequests)
	if err := http.ListenAndServe("127.0.0.1:"+port, mux); err != nil {
		fmt.Fprintln(os.Stderr, "coldstart:", err)
		os.Exit(1)
	}
}

func envFloat(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil && v > 0 {
		return v
	}
	return def
}
