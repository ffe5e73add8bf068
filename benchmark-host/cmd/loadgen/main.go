// Command loadgen runs one interleaved champion/challenger experiment from a plan file and
// prints the result JSON on stdout, with one progress line per slice on stderr.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/loadgen"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/plan"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/version"
)

func main() {
	os.Exit(run())
}

func run() int {
	planPath := flag.String("plan", "", "path to the plan JSON (see contract/schema/plan.schema.json)")
	check := flag.Bool("check", false, "validate the plan, print it with defaults filled, and exit")
	showVersion := flag.Bool("version", false, "print the version and exit")
	holdCPUs := flag.Bool("hold-cpus-awake", false, "hold PM QoS /dev/cpu_dma_latency at 0 during the run (no CPU sleeps in a deep idle state)")
	cpuProfile := flag.String("cpuprofile", "", "write a pprof CPU profile of the run to this file (for bench/compare.sh)")
	flag.Parse()
	if *showVersion {
		fmt.Println(version.Line("loadgen"))
		return 0
	}
	if *planPath == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: loadgen --plan FILE [--check] [--cpuprofile FILE] | --version")
		return 2
	}
	p, err := plan.Load(*planPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		return 2
	}
	if *check {
		if err := p.Encode(os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			return 1
		}
		return 0
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			return 2
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var opts []loadgen.Option
	if *holdCPUs {
		opts = append(opts, loadgen.WithCPUsHeldAwake(loadgen.OpenForWriting))
	}
	res, err := loadgen.Run(ctx, p, os.Stderr, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		return 2
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen: writing result:", err)
		return 1
	}
	if res.Partial {
		return 3
	}
	return 0
}
