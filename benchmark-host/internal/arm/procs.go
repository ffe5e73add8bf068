package arm

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Proc is one process as /proc shows it.
type Proc struct {
	Pid, PPid int
	Sid       int    // its session: a service's or dependency's own, unless it left it
	State     byte   // R, S, D, T, Z, …
	UID       uint32 // real user id
	CPUUs     uint64 // user + system time of the process and its reaped children
	RSSBytes  uint64
	Cmdline   string
}

// clockTicksUs is one clock tick of /proc/PID/stat in µs (USER_HZ is 100 on Linux).
const clockTicksUs = 10_000

var pageSize = uint64(os.Getpagesize())

// ReadProc reads one process; the real uid comes from status, which stays readable when the
// process makes itself non-dumpable (and /proc/PID then belongs to root).
func ReadProc(pid int) (Proc, error) {
	p := Proc{Pid: pid}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return p, err
	}
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return p, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 22 {
		return p, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	// Fields after the command: state(0) ppid(1) pgrp(2) session(3) … utime(11) stime(12) cutime(13) cstime(14) … rss(21).
	p.State = f[0][0]
	p.PPid, _ = strconv.Atoi(f[1])
	p.Sid, _ = strconv.Atoi(f[3])
	var ticks uint64
	for _, k := range []int{11, 12, 13, 14} {
		v, _ := strconv.ParseUint(f[k], 10, 64)
		ticks += v
	}
	p.CPUUs = ticks * clockTicksUs
	rss, _ := strconv.ParseUint(f[21], 10, 64)
	p.RSSBytes = rss * pageSize
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return p, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Uid:"); ok {
			if fs := strings.Fields(v); len(fs) > 0 {
				u, _ := strconv.ParseUint(fs[0], 10, 32)
				p.UID = uint32(u)
			}
			break
		}
	}
	cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	p.Cmdline = strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
	return p, nil
}

// Scan reads every process for which keep returns true.
func Scan(keep func(Proc) bool) []Proc {
	entries, _ := os.ReadDir("/proc")
	var out []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := ReadProc(pid); err == nil && keep(p) {
			out = append(out, p)
		}
	}
	return out
}

// OfUser is every live (not zombie) process whose real uid is uid.
func OfUser(uid uint32) []Proc {
	return Scan(func(p Proc) bool { return p.UID == uid && p.State != 'Z' })
}

// Descendants is root and every live process below it.
func Descendants(root int) []Proc {
	all := Scan(func(p Proc) bool { return p.State != 'Z' })
	children := map[int][]Proc{}
	var out []Proc
	for _, p := range all {
		children[p.PPid] = append(children[p.PPid], p)
		if p.Pid == root {
			out = append(out, p)
		}
	}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i].Pid]...)
	}
	return out
}

// Describe is "pid (command line)" for each process, for messages.
func Describe(procs []Proc) string {
	var parts []string
	for _, p := range procs {
		cmd := p.Cmdline
		if len(cmd) > 60 {
			cmd = cmd[:60] + "…"
		}
		parts = append(parts, fmt.Sprintf("%d (%s)", p.Pid, cmd))
	}
	return strings.Join(parts, ", ")
}

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER.
const prSetChildSubreaper = 36

// BecomeSubreaper makes this process the parent of every orphan among its descendants (a
// process that double-forks or calls setsid), so that ReapZombies can collect them: a PID 1
// that never reaps (as in some containers) would otherwise keep them as zombies that count
// against the arm's RLIMIT_NPROC.
func BecomeSubreaper() error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", e)
	}
	return nil
}

// launchedBy records which arm started each process perf-host started through Launch, until
// that arm's Clear: when both arms run as one user, clearing one must leave the other's exits
// to the other's own Waits. Reaping one first failed that Wait with "waitid: no child
// processes" (an arm's setup that succeeded then failed its arm).
var launchedBy = struct {
	sync.Mutex
	arms map[int]*Arm
}{arms: map[int]*Arm{}}

func recordLaunch(pid int, a *Arm) {
	launchedBy.Lock()
	launchedBy.arms[pid] = a
	launchedBy.Unlock()
}

// ReapZombies collects this process's zombie children of a's user, but those another arm
// started: a's own, and the orphans perf-host adopted as a subreaper (BecomeSubreaper).
func ReapZombies(a *Arm) {
	self := os.Getpid()
	// /proc is read before the lock: the other arm's Launch records its program meanwhile.
	zombies := Scan(func(p Proc) bool { return p.PPid == self && p.State == 'Z' && p.UID == a.User.UID })
	launchedBy.Lock()
	defer launchedBy.Unlock()
	for _, p := range zombies {
		if owner, ok := launchedBy.arms[p.Pid]; ok && owner != a {
			continue
		}
		var ws syscall.WaitStatus
		syscall.Wait4(p.Pid, &ws, syscall.WNOHANG, nil)
	}
	// What a started is gone now (Clear killed it): its pids may be another process's next.
	for pid, owner := range launchedBy.arms {
		if owner == a {
			delete(launchedBy.arms, pid)
		}
	}
}
