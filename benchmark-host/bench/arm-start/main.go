// Command arm-start measures what an arm's programs pay to start in mounts and IPC of their own
// (internal/armns): the same program (/bin/true) started as an unprivileged user N times
// directly and N times through arm-exec, interleaved, and the median and p90 wall time of each
// with their ratio. Run it as root from benchmark-host (it builds arm-exec first):
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
	spec := armns.Spec{Exec: exe, Tmp: filepath.Join(home, "tmp"), ShmBytes: 64 << 20, UID: uid, GID: uid}
	times := map[bool][]time.Duration{}
	for i := range 2 * n {
		private := i%2 == 1
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}}
		if private {
			spec.Wrap(cmd)
		}
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("private %v: %w", private, err)
		}
		times[private] = append(times[private], time.Since(start))
	}
	q := func(d []time.Duration, p float64) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[int(p*float64(len(s)-1))]
	}
	fmt.Printf("%d starts of /bin/true as uid %d each, interleaved:\n", n, uid)
	fmt.Printf("  %-28s median %8v  p90 %8v\n", "directly", q(times[false], 0.5), q(times[false], 0.9))
	fmt.Printf("  %-28s median %8v  p90 %8v\n", "through arm-exec (armns)", q(times[true], 0.5), q(times[true], 0.9))
	fmt.Printf("  ratio of medians %.2fx, difference %v\n", float64(q(times[true], 0.5))/float64(q(times[false], 0.5)), q(times[true], 0.5)-q(times[false], 0.5))
	return nil
}
