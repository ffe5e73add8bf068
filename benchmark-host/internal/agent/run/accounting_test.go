package run

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
)

// An arm that loses a process while the kernel's OOM count rises fails as out of memory, named,
// whichever of the two a boundary sees first; one that loses a process without an OOM kill
// does not.
func TestAnArmThatLostProcessesToTheOOMKillerFails(t *testing.T) {
	self, err := arm.Current()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		oomFirst   bool // the count rises a boundary before the process is seen gone
		oom, fails bool
	}{
		{"count and loss together", false, true, true},
		{"count a boundary before the loss", true, true, true},
		{"a process that exits on its own", false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sh := exec.Command("/bin/sh", "-c", "sleep 100 & sleep 100 & wait")
			if err := sh.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { syscall.Kill(-sh.Process.Pid, syscall.SIGKILL); sh.Process.Kill(); sh.Wait() }()
			challenger := &arm.Arm{Name: contract.Challenger, User: self, OOMScoreAdj: arm.OOMChallenger}
			challenger.Started(sh.Process.Pid)
			champion := &arm.Arm{Name: contract.Champion, User: self}
			count := int64(7)
			var failed []string
			acc := &sliceAccounting{arms: map[string]*arm.Arm{contract.Champion: champion, contract.Challenger: challenger},
				oom: count, oomAt: -1, lostAt: map[string]int{}, samples: map[int]boundarySample{}, oomKills: func() int64 { return count },
				fail: func(a string, f contract.ArmFailure, msg string) { failed = append(failed, string(f.Of(a))+": "+msg) }}
			for deadline := time.Now().Add(5 * time.Second); len(challenger.Procs()) < 3 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			acc.Boundary(0)
			if c.oom && c.oomFirst {
				count++
			}
			acc.Boundary(1)
			procs := challenger.Procs()
			for _, p := range procs {
				if p.Pid != sh.Process.Pid {
					syscall.Kill(p.Pid, syscall.SIGKILL)
					break
				}
			}
			time.Sleep(50 * time.Millisecond)
			if c.oom && !c.oomFirst {
				count++
			}
			acc.Boundary(2)
			acc.Boundary(3)
			if got := len(failed) > 0; got != c.fails {
				t.Fatalf("failed %v, want %v", failed, c.fails)
			}
			if c.fails && !strings.HasPrefix(failed[0], "challenger_out_of_memory: challenger: killed for memory") {
				t.Errorf("failure %q", failed[0])
			}
		})
	}
}
