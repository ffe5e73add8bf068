package cgroup

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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
