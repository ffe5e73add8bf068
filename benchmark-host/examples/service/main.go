// Command service is the example service the demo and the tests deploy: a small HTTP API
// that does a fixed amount of hashing per request. Built with -tags slow it does extra work
// per request (see work_slow.go), the kind of regression the gate exists to catch; built with
// -tags cold it is slow for its first seconds of serving (see work_cold.go); built with
// -tags slowreport only its /report endpoint does extra work (see report_slow.go).
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		fmt.Fprintln(os.Stderr, "service: PORT is not set")
		os.Exit(2)
	}
	rounds := envInt("HASH_ROUNDS", 200)
	// /report is the API's slow endpoint: REPORT_FACTOR times /work's hashing. A workload with a
	// few reports in its mix has a p99 made of the service's own work, not of scheduling.
	reportRounds := rounds * envInt("REPORT_FACTOR", 20)
	// DELAY_US adds a fixed wait per request (/work and /report): a known shift for bench/compare.sh.
	delay := time.Duration(envInt("DELAY_US", 0)) * time.Microsecond
	// SPIN_US adds a fixed busy wait after it: a known cost to the microsecond, where a sleep ends
	// on the timer's next tick (about a millisecond here) and so moves latency by a step that
	// depends on when the request arrived. The history's tests give builds their cost by it.
	spin := time.Duration(envInt("SPIN_US", 0)) * time.Microsecond
	// A release may carry a VERSION file, so that which build serves a port can be checked.
	version, _ := os.ReadFile("VERSION")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s\n", variant, strings.TrimSpace(string(version)))
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	hashing := func(rounds int, finish func([32]byte) [32]byte) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			sum := sha256.Sum256([]byte(r.URL.Query().Get("key")))
			for range rounds {
				sum = sha256.Sum256(sum[:])
			}
			sum = finish(extraWork(sum))
			if delay > 0 {
				time.Sleep(delay)
			}
			for start := time.Now(); time.Since(start) < spin; {
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"digest":%q}`+"\n", hex.EncodeToString(sum[:8]))
		}
	}
	mux.HandleFunc("/work", hashing(rounds, func(sum [32]byte) [32]byte { return sum }))
	mux.HandleFunc("/report", hashing(reportRounds, summarizeReport))
	srv := &http.Server{Addr: "127.0.0.1:" + port, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	fmt.Printf("service (%s build) listening on %s\n", variant, srv.Addr)
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "service:", err)
		os.Exit(1)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v >= 0 {
		return v
	}
	return def
}
