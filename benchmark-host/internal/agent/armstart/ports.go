package armstart

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

// PortTakenError is a start that found one of its service's ports held by a process outside
// the arm (the arm was cleared when its copy was installed): the service was not started, and
// starting it again fails the same way until that process lets the port go.
type PortTakenError struct {
	Name   string // champion, challenger, candidate champion
	SHA    string
	Port   int
	Var    string // PORT, PORT_<NAME>
	Holder string // who listens on the port, when /proc says; "" otherwise
	Err    error  // the failed listen
}

func (e *PortTakenError) Error() string {
	held := e.Err.Error()
	if e.Holder != "" {
		held = "held by " + e.Holder
	}
	return fmt.Sprintf("%s %s: port %d (%s) is already in use by another process (%s); stop it or configure another port", e.Name, e.SHA, e.Port, e.Var, held)
}

func (e *PortTakenError) Unwrap() error { return e.Err }

// portsFree checks, before the service starts, that no other process listens on the ports it
// will listen on: its main port and its own named ports (service.ports it opens itself).
func (s *Start) portsFree() error {
	ports := map[string]int{}
	if s.Arm.Port != 0 {
		ports[contract.VarPort] = s.Arm.Port
	}
	for _, name := range s.Spec.Ports {
		ports[contract.PortVariable(name)] = s.ports[name]
	}
	for _, v := range slices.Sorted(maps.Keys(ports)) {
		port := ports[v]
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			l.Close()
			continue
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			return &PortTakenError{Name: s.Name, SHA: s.SHA, Port: port, Var: v, Holder: portHolder(port), Err: err}
		}
		// Any other failure is the service's own start's to say.
	}
	return nil
}

// portHolder describes the processes listening on port, from /proc: "pid 123 (python3), user
// alice (uid 1000)". Only the process's name, not its command line: the message may reach a
// pull request's check run, and another service's arguments may hold its secrets. What /proc
// does not show (another user's file descriptors, to an unprivileged perf-host) is left out; ""
// when nothing could be read.
func portHolder(port int) string {
	var holders []string
	for _, l := range service.Listeners(port) {
		who := strconv.FormatUint(uint64(l.UID), 10)
		if u, err := user.LookupId(who); err == nil {
			who = u.Username + " (uid " + who + ")"
		} else {
			who = "uid " + who
		}
		pids := socketPids(l.Inode)
		if len(pids) == 0 {
			holders = append(holders, "a process of user "+who)
			continue
		}
		for _, pid := range pids {
			holders = append(holders, fmt.Sprintf("pid %d (%s), user %s", pid, processName(pid), who))
		}
	}
	slices.Sort(holders)
	return strings.Join(slices.Compact(holders), "; ")
}

// socketPids are the processes holding the socket of inode open.
func socketPids(inode uint64) []int {
	if inode == 0 {
		return nil
	}
	target := "socket:[" + strconv.FormatUint(inode, 10) + "]"
	var pids []int
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		for _, fd := range fds {
			if link, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); err == nil && link == target {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// processName is a process's name as the kernel keeps it (comm, at most 15 bytes), or "?".
func processName(pid int) string {
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(comm))
}
