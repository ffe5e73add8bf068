// Command testhost starts a throwaway benchmark host for the action's tests and prints it as
// one JSON line, then keeps it up until its stdin closes. By default it is sshd + perf-host as
// root (see internal/sshtest); with --install it is a host installed by install.sh, with users,
// a cgroup subtree and a packet filter of its own, so that several on one machine make a pool.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/sshtest"
)

func main() {
	perfHost := flag.String("perf-host", "", "path to the perf-host binary")
	lockWait := flag.Duration("lock-wait", 60*time.Second, "perf-host --lock-wait")
	holdCPUs := flag.Bool("hold-cpus-awake", false, "perf-host --hold-cpus-awake")
	install := flag.String("install", "", "install the host with this install.sh instead")
	installArgs := flag.String("install-args", "", "more install.sh options, separated by spaces")
	key := flag.String("key", "", "with --install: the CI key's private half to install (default: a new one)")
	flag.Parse()
	if *install != "" {
		installed(*install, *key, strings.Fields(*installArgs))
		return
	}
	var extra []string
	if *holdCPUs {
		extra = append(extra, "--hold-cpus-awake")
	}
	h, err := sshtest.Start(sshtest.Options{PerfHost: *perfHost, LockWait: *lockWait, ExtraFlags: extra})
	if err != nil {
		fail(err)
	}
	json.NewEncoder(os.Stdout).Encode(h)
	io.Copy(io.Discard, os.Stdin)
	h.Close(false)
}

// installed installs a host with install.sh, starts its sshd, prints it, and removes it all
// (users, cgroups, mounts, nft table) when stdin closes.
func installed(script, key string, args []string) {
	h, err := sshtest.NewInstalled(key)
	if err != nil {
		fail(err)
	}
	if out, err := h.Install(script, nil, args...); err != nil {
		h.Remove(false)
		fail(fmt.Errorf("install.sh: %v\n%s", err, out))
	}
	if err := h.StartSSHD(); err != nil {
		h.Remove(false)
		fail(err)
	}
	json.NewEncoder(os.Stdout).Encode(h)
	io.Copy(io.Discard, os.Stdin)
	h.Remove(false)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "testhost:", err)
	os.Exit(1)
}
