package privilege

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// capEff is the effective capability mask of each thread of this process, from /proc.
func capEff() (map[int]uint64, error) {
	out := map[int]uint64{}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		b, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "status"))
		if err != nil {
			continue // the thread ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
				out[tid], _ = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			}
		}
	}
	return out, nil
}

// helper runs inside a copy of the test binary that holds CAP_KILL as permitted only, as an
// unprivileged user: it reports what it finds on stdout.
func helper() {
	report := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	before, _ := capEff()
	for tid, eff := range before {
		if eff != 0 {
			report("FAIL thread %d starts with CapEff %x", tid, eff)
		}
	}
	err := Do(Thread{Caps: []Cap{Kill}}, func() error {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/status", syscall.Gettid()))
		if !strings.Contains(string(b), "CapEff:\t0000000000000020") {
			report("FAIL inside Do the thread's capabilities are not CAP_KILL alone:\n%s", b)
		}
		return nil
	})
	if err != nil {
		report("FAIL Do(CAP_KILL): %v", err)
	}
	after, _ := capEff()
	for tid, eff := range after {
		if eff != 0 {
			report("FAIL after Do thread %d keeps CapEff %x", tid, eff)
		}
	}
	if err := Do(Thread{Caps: []Cap{SetUID}}, func() error { return nil }); err == nil || !strings.Contains(err.Error(), "lacks CAP_SETUID") {
		report("FAIL Do(CAP_SETUID) without it permitted: %v", err)
	}
	report("done: permitted %v, effective %v", Permitted(), Effective())
}

func TestMain(m *testing.M) {
	if os.Getenv("PRIVILEGE_HELPER") == "1" {
		helper()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A capability held as permitted only is in effect inside Do, on its thread, and nowhere else.
func TestDoRaisesACapabilityOnOneThreadForOneOperation(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("setting file capabilities needs root")
	}
	setcap, err := exec.LookPath("setcap")
	if err != nil {
		t.Skip("setcap not installed (libcap2-bin)")
	}
	dir, err := os.MkdirTemp("", "privilege-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755) // the unprivileged helper runs from it
	self, _ := os.Executable()
	bin := filepath.Join(dir, "helper")
	if b, err := os.ReadFile(self); err != nil || os.WriteFile(bin, b, 0o755) != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(setcap, "cap_kill+p", bin).CombinedOutput(); err != nil {
		t.Fatalf("setcap: %v %s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{"PRIVILEGE_HELPER=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "FAIL") || !strings.Contains(string(out), "done: permitted [CAP_KILL], effective []") {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
