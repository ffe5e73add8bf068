package cgroup

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/placement"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/privilege"
)

// subtree makes a cgroup v2 directory of the test's own, as install.sh would, and removes it.
func subtree(t *testing.T) string {
	t.Helper()
	mount := Mount()
	if mount == "" || os.Geteuid() != 0 {
		t.Skip("needs a cgroup v2 mount and root")
	}
	b := make([]byte, 4)
	rand.Read(b)
	dir := filepath.Join(mount, "perf-gate-unit-"+hex.EncodeToString(b))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() {
				os.WriteFile(filepath.Join(dir, e.Name(), "cgroup.kill"), []byte("1"), 0)
				time.Sleep(50 * time.Millisecond)
				os.Remove(filepath.Join(dir, e.Name()))
			}
		}
		os.Remove(dir)
	})
	return dir
}

// startIn starts a shell command in the group with CLONE_INTO_CGROUP.
func startIn(t *testing.T, g *Group, script string) *exec.Cmd {
	t.Helper()
	dir, err := g.OpenDir()
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	return cmd
}

func TestOpenSaysWhatItFoundAndWhatFallsBack(t *testing.T) {
	if s := Open("", true); s.Mode != ModeNone || !strings.Contains(s.Note, "contained by their user ids") {
		t.Errorf("no subtree: %+v", s)
	}
	if s := Open(t.TempDir(), true); s.Mode != ModeNone || !strings.Contains(s.Note, "not on a cgroup v2 file system") {
		t.Errorf("a plain directory: %+v", s)
	}
	dir := subtree(t)
	if s := Open(dir, false); s.Mode != ModeNone || !strings.Contains(s.Note, "CAP_DAC_OVERRIDE") {
		t.Errorf("a subtree it may not enter: %+v", s)
	}
	s := Open(dir, true)
	if s.Mode == ModeNone {
		t.Fatalf("a usable subtree: %+v", s)
	}
	t.Logf("%s: %s", s.Mode, s.Note)
	g, err := s.Group("arm")
	if err != nil || g == nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(g.Path); err != nil || !fi.IsDir() {
		t.Errorf("the group was not made: %v", err)
	}
}

// cgroup.kill stops a process that left its session and process group, the group is empty,
// and a process started into it afterwards lives (Linux 6.18 kills one started into a cgroup
// that was ever killed, hence the fresh group).
func TestKillEmptiesTheGroupAndItTakesNewProcessesAfter(t *testing.T) {
	g, err := Open(subtree(t), true).Group("arm")
	if err != nil {
		t.Fatal(err)
	}
	startIn(t, g, "setsid sleep 300 & sleep 300")
	time.Sleep(100 * time.Millisecond)
	if procs, _ := g.Procs(); len(procs) != 3 {
		t.Fatalf("the group holds %v, want the shell and two sleeps", procs)
	}
	left, err := g.Kill(2 * time.Second)
	if err != nil || len(left) > 0 {
		t.Fatalf("after Kill: %v left, %v", left, err)
	}
	cmd := startIn(t, g, "exec sleep 300")
	time.Sleep(200 * time.Millisecond)
	if err := syscall.Kill(cmd.Process.Pid, 0); err != nil {
		t.Fatalf("a process started into the group after the kill died: %v", err)
	}
	if procs, _ := g.Procs(); len(procs) != 1 {
		t.Errorf("the group holds %v, want the new process", procs)
	}
	g.Kill(2 * time.Second)
}

func TestCPUUsageCountsTheGroupsProcesses(t *testing.T) {
	g, err := Open(subtree(t), true).Group("arm")
	if err != nil {
		t.Fatal(err)
	}
	before, err := g.CPUUsageUs()
	if err != nil {
		t.Fatal(err)
	}
	startIn(t, g, "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done")
	for range 200 {
		if procs, _ := g.Procs(); len(procs) == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	after, _ := g.CPUUsageUs()
	t.Logf("a shell loop used %d µs of CPU", after-before)
	if after-before < 10_000 {
		t.Errorf("the group's CPU grew by %d µs only", after-before)
	}
}

// v1Subtree makes a subtree of the test's own in the v1 hierarchy of controller, as install.sh
// does on a hybrid host, and removes it.
func v1Subtree(t *testing.T, controller string) string {
	t.Helper()
	root := "/sys/fs/cgroup/" + controller
	if mounts := readString("/proc/self/mounts"); os.Geteuid() != 0 || !strings.Contains(mounts, " "+root+" cgroup ") {
		t.Skipf("no cgroup v1 %s hierarchy at %s (or not root)", controller, root)
	}
	b := make([]byte, 4)
	rand.Read(b)
	dir := filepath.Join(root, "perf-gate-unit-"+hex.EncodeToString(b))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if controller == "cpuset" {
		for _, f := range []string{"cpuset.mems", "cpuset.cpus"} {
			os.WriteFile(filepath.Join(dir, f), []byte(readString(filepath.Join(root, f))), 0)
		}
	}
	t.Cleanup(func() {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() {
				os.Remove(filepath.Join(dir, e.Name()))
			}
		}
		os.Remove(dir)
	})
	return dir
}

// On a hybrid host the v1 memory and cpuset controllers stand in for v2's: a process started
// from a thread that joined the group's v1 directories is born in them (and in its v2 group),
// the starting process is not moved, and the memory limit kills inside the group, counted.
func TestV1ControllersHoldWhatTheV2SubtreeLacks(t *testing.T) {
	s := Open(subtree(t), true)
	if s.Has("memory") {
		t.Skip("cgroup v2 has the memory controller here: v1 is not used")
	}
	memory, cpuset, pids := v1Subtree(t, "memory"), v1Subtree(t, "cpuset"), v1Subtree(t, "pids")
	s.OpenV1([]string{memory, cpuset, pids, t.TempDir()})
	t.Logf("%s", s.Note)
	if s.V1("memory") != memory || s.V1("cpuset") != cpuset || s.V1("pids") != pids || !s.Has("memory") || !s.Has("cpuset") || !s.Has("pids") {
		t.Fatalf("the v1 subtrees were not taken: %s", s.Note)
	}
	if !strings.Contains(s.Note, "not on a cgroup v1 file system") {
		t.Errorf("a plain directory is not refused by name: %s", s.Note)
	}
	g, err := s.Group("arm")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetMemoryMax(64 << 20); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(readString(filepath.Join(memory, "arm", "memory.limit_in_bytes"))); got != strconv.Itoa(64<<20) {
		t.Errorf("memory.limit_in_bytes %s", got)
	}
	// Raising it again must pass memsw's ordering.
	if err := g.SetMemoryMax(128 << 20); err != nil {
		t.Fatal(err)
	}
	if err := g.SetMemoryMax(64 << 20); err != nil {
		t.Fatal(err)
	}
	online, _ := placement.Online()
	if err := g.SetCPUs(strconv.Itoa(online[len(online)-1])); err != nil {
		t.Fatal(err)
	}
	if err := g.SetMaxProcs(50); err != nil {
		t.Fatal(err)
	}
	selfBefore, _ := os.ReadFile("/proc/self/cgroup")
	// tail holds the one 96 MiB line it reads, more than the limit: the kernel kills it inside
	// the group.
	cmd := exec.Command("/bin/sh", "-c", `cat /proc/self/cgroup; grep Cpus_allowed_list /proc/self/status; head -c 100663296 /dev/zero | tail`)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	dir, err := g.OpenDir()
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
	// A second process, which outlives the first's kill: stopping the arm kills it and makes
	// the group anew.
	sleeper := exec.Command("/bin/sleep", "30")
	sleeper.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
	for _, c := range []*exec.Cmd{sleeper, cmd} {
		if err := privilege.Do(privilege.Thread{JoinV1: g.V1Dirs()}, c.Start); err != nil {
			t.Fatal(err)
		}
	}
	go sleeper.Wait()
	err = cmd.Wait()
	t.Logf("%v\n%s", err, out.String())
	for _, want := range []string{"memory:/" + filepath.Base(memory) + "/arm\n", "cpuset:/" + filepath.Base(cpuset) + "/arm\n", "pids:/" + filepath.Base(pids) + "/arm\n", "0::/" + filepath.Base(filepath.Dir(g.Path)) + "/arm\n"} {
		if !strings.Contains(out.String(), want[:len(want)-1]) {
			t.Errorf("the process was not born in %q", want)
		}
	}
	if !strings.Contains(out.String(), "Cpus_allowed_list:\t"+strconv.Itoa(online[len(online)-1])) {
		t.Errorf("the process was not held to CPU %d by the cpuset", online[len(online)-1])
	}
	if n, ok := g.OOMKills(); !ok || n != 1 || err == nil {
		t.Errorf("the group's OOM kills: %d %v; the process ended %v", n, ok, err)
	}
	outOfMemory(t, s)
	if selfAfter, _ := os.ReadFile("/proc/self/cgroup"); string(selfAfter) != string(selfBefore) {
		t.Errorf("the starting process moved:\n%s\nwas\n%s", selfAfter, selfBefore)
	}
	// The thread that started it went back to the test's own groups.
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, task := range tasks {
		if cg, _ := os.ReadFile("/proc/self/task/" + task.Name() + "/cgroup"); strings.Contains(string(cg), "/arm\n") {
			t.Errorf("thread %s stayed in the arm's groups:\n%s", task.Name(), cg)
		}
	}
	// The count lasts across stopping the arm, which makes the group anew (a run reads it
	// after), and the next start forgets it, with the same limit and CPUs.
	if _, err := g.Kill(time.Second); err != nil {
		t.Fatal(err)
	}
	if n, _ := g.OOMKills(); n != 1 {
		t.Errorf("after Kill the group counts %d OOM kills, want 1", n)
	}
	if err := g.ForgetOOMKills(); err != nil {
		t.Fatal(err)
	}
	if n, _ := g.OOMKills(); n != 0 {
		t.Errorf("after ForgetOOMKills the group still counts %d OOM kills", n)
	}
	if got := strings.TrimSpace(readString(filepath.Join(memory, "arm", "memory.limit_in_bytes"))); got != strconv.Itoa(64<<20) {
		t.Errorf("the group made anew has memory.limit_in_bytes %s", got)
	}
	if got := strings.TrimSpace(readString(filepath.Join(cpuset, "arm", "cpuset.cpus"))); got != strconv.Itoa(online[len(online)-1]) {
		t.Errorf("the group made anew has cpuset.cpus %q", got)
	}
	if got := strings.TrimSpace(readString(filepath.Join(pids, "arm", "pids.max"))); got != "50" {
		t.Errorf("the group made anew has pids.max %q", got)
	}
}

// outOfMemory: a group whose memory that cannot be reclaimed (here 58 MiB of a tmpfs file its
// process wrote) is within 8 MiB of its 64 MiB limit is out of memory, before the kernel kills.
func outOfMemory(t *testing.T, s *Setup) {
	g, err := s.Group("hold")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetMemoryMax(64 << 20); err != nil {
		t.Fatal(err)
	}
	if pinned, out := g.OutOfMemory(); out {
		t.Errorf("an empty group is out of memory, holding %d MiB", pinned>>20)
	}
	file := "/dev/shm/" + filepath.Base(s.Path)
	t.Cleanup(func() { os.Remove(file) })
	dir, err := g.OpenDir()
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	cmd := exec.Command("/bin/sh", "-c", "head -c 60817408 /dev/zero > "+file)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
	if err := privilege.Do(privilege.Thread{JoinV1: g.V1Dirs()}, cmd.Run); err != nil {
		t.Fatal(err)
	}
	if pinned, out := g.OutOfMemory(); !out {
		t.Errorf("a group holding %d MiB of its 64 MiB is not out of memory", pinned>>20)
	}
}
