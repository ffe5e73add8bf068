// Command testhost starts a throwaway benchmark host (sshd + perf-host, see internal/sshtest)
// for the action's tests: it prints the host as one JSON line, then keeps it up until its
// stdin closes.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/sshtest"
)

func main() {
	perfHost := flag.String("perf-host", "", "path to the perf-host binary")
	lockWait := flag.Duration("lock-wait", 60*time.Second, "perf-host --lock-wait")
	holdCPUs := flag.Bool("hold-cpus-awake", false, "perf-host --hold-cpus-awake")
	flag.Parse()
	var extra []string
	if *holdCPUs {
		extra = append(extra, "--hold-cpus-awake")
	}
	h, err := sshtest.Start(sshtest.Options{PerfHost: *perfHost, LockWait: *lockWait, ExtraFlags: extra})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testhost:", err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(h)
	io.Copy(io.Discard, os.Stdin)
	h.Close(false)
}
