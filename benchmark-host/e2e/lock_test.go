package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// lockHolders lists every process with an open descriptor on the host lock's file, as
// "pid (command line)", by comparing inodes under /proc/*/fd.
func lockHolders(t *testing.T, root string) []string {
	t.Helper()
	var lock syscall.Stat_t
	if err := syscall.Stat(filepath.Join(root, "lock"), &lock); err != nil {
		t.Fatalf("the lock file: %v", err)
	}
	var out []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		for _, fd := range fds {
			var st syscall.Stat_t
			if syscall.Stat(filepath.Join("/proc", p.Name(), "fd", fd.Name()), &st) == nil && st.Ino == lock.Ino && st.Dev == lock.Dev {
				cmd, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
				out = append(out, fmt.Sprintf("%d (%s)", pid, strings.Join(strings.Fields(strings.ReplaceAll(string(cmd), "\x00", " ")), " ")))
				break
			}
		}
	}
	return out
}

// The lock is handed to the run's executor and to no one else: not to the champion supervisor
// a run restarts, not to the champion it starts, not to the challenger
// (docs/design/0017-host-faults.md: they inherited the executor's descriptor and kept the host
// locked after the run).
func TestTheLockIsNeverInherited(t *testing.T) {
	t.Parallel()
	h := newHost(t, hostOptions{lockWait: 2 * time.Second})
	h.setupChampion()
	h.deployChallenger()
	for i, id := range []string{"lock-1", "lock-2"} {
		// The supervisor dies before the run, so the run's executor has to start a new one.
		var rec struct{ Pid int }
		if b, err := os.ReadFile(filepath.Join(h.Root, "champion.json")); err != nil || json.Unmarshal(b, &rec) != nil || rec.Pid == 0 {
			t.Fatalf("run %d: no supervisor record: %v %s", i, err, b)
		}
		syscall.Kill(rec.Pid, syscall.SIGKILL)
		h.must(strings.NewReader(runPlan("bbbbbbb", 2, 0.5)), "run "+id)
		w := follow(t, h.SSHCommand("wait "+id), "slice 1/4")
		executor, _ := os.ReadFile(filepath.Join(h.Root, "runs", id, "pid"))
		during := lockHolders(t, h.Root)
		if len(during) != 1 || !strings.HasPrefix(during[0], strings.TrimSpace(string(executor))+" ") {
			t.Errorf("run %s: during the run the lock is held by %v; want only the executor (pid %s)", id, during, executor)
		}
		w.finish()
		time.Sleep(300 * time.Millisecond) // the executor's exit
		if after := lockHolders(t, h.Root); len(after) != 0 {
			t.Errorf("run %s: after the run the lock file is still open in %v", id, after)
		}
		var st contract.Status
		json.Unmarshal([]byte(h.must(nil, "status")), &st)
		if st.Lock != nil {
			t.Errorf("run %s: status says the lock is held by %+v", id, st.Lock)
		}
	}
}
