// Command arm-start measures what an arm's programs pay to start in mounts and IPC of their own
// (internal/armns): the same program (/bin/true) started as an unprivileged user N times
// directly, N times through arm-exec and N times through arm-exec with its abstract unix sockets
// scoped, interleaved, and the median and p90 wall time of each with its ratio to the one before. Run it as root from benchmark-host (it builds arm-exec first):
//
//	go run ./bench/arm-start -n 300
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/armns"
)

func main() {
	n := flag.Int("n", 300, "starts of each kind")
	uid := flag.Int("uid", 65534, "the user the program runs as (nobody)")
	flag.Parse()
	if err := run(*n, uint32(*uid)); err != nil {
		fmt.Fprintln(os.Stderr, "arm-start:", err)
		os.Exit(1)
	}
}

func run(n int, uid uint32) error {
	dir, err := os.MkdirTemp("", "arm-start-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	exe := filepath.Join(dir, "arm-exec")
	if out, err := exec.Command("go", "build", "-o", exe, "./cmd/arm-exec").CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	home := filepath.Join(dir, "arm")
	os.Mkdir(home, 0o700)
	os.Chown(home, int(uid), int(uid))
	spec := armns.Spec{Exec: exe, Mounts: true, Tmp: filepath.Join(home, "tmp"), ShmBytes: 64 << 20, UID: uid, GID: uid}
	scoped := spec
	scoped.ScopeSockets = armns.LandlockABI() >= armns.ScopeABI
	kinds := []struct {
		name string
		wrap func(*exec.Cmd)
	}{
		{"directly", func(*exec.Cmd) {}},
		{"through arm-exec (mounts)", spec.Wrap},
		{"arm-exec, sockets scoped", scoped.Wrap},
	}
	if !scoped.ScopeSockets {
		fmt.Printf("the kernel has no Landlock scopes (ABI %d): the third kind is the second\n", armns.LandlockABI())
	}
	times := make([][]time.Duration, len(kinds))
	for i := range len(kinds) * n {
		k := i % len(kinds)
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}}
		kinds[k].wrap(cmd)
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w", kinds[k].name, err)
		}
		times[k] = append(times[k], time.Since(start))
	}
	q := func(d []time.Duration, p float64) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[int(p*float64(len(s)-1))]
	}
	fmt.Printf("%d starts of /bin/true as uid %d each, interleaved:\n", n, uid)
	for k, kind := range kinds {
		fmt.Printf("  %-28s median %8v  p90 %8v", kind.name, q(times[k], 0.5), q(times[k], 0.9))
		if k > 0 {
			prev := q(times[k-1], 0.5)
			fmt.Printf("  %.2fx the line above (%+v)", float64(q(times[k], 0.5))/float64(prev), q(times[k], 0.5)-prev)
		}
		fmt.Println()
	}
	return nil
}
