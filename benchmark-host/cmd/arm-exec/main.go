// Command arm-exec starts one of an arm's programs (its service, a dependency, its setup) in
// mounts of its own: perf-host runs it as the arm's user in new user, mount and IPC namespaces,
// and it binds the arm's own directory over /tmp and /var/tmp, mounts a fresh /dev/shm and
// /dev/mqueue, keeps it off the abstract unix sockets it did not make (a Landlock scope, where
// the kernel has one), drops its one capability and executes the program (see internal/armns).
// A container runtime is started through it for the scope alone.
//
//	arm-exec [--tmp DIR --shm-bytes N] [--scope-abstract-sockets] -- PATH ARGV0 [ARGS…]
package main

import (
	"fmt"
	"os"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/armns"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/version"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println(version.Line("arm-exec"))
		return
	}
	err := armns.Enter(os.Args[1:])
	fmt.Fprintln(os.Stderr, "arm-exec:", err)
	os.Exit(126)
}
