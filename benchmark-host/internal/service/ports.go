package service

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// PortRange is where a service's extra ports (service.ports) come from: [Lo, Hi], or free ports
// outside the kernel's ephemeral range (FreeRange) when it is zero.
type PortRange struct{ Lo, Hi int }

// ParsePortRange reads --service-ports: "" (free ports, FreeRange) or "LO-HI".
func ParsePortRange(s string) (PortRange, error) {
	if s == "" {
		return PortRange{}, nil
	}
	lo, hi, ok := strings.Cut(s, "-")
	a, err1 := strconv.Atoi(lo)
	b, err2 := strconv.Atoi(hi)
	if !ok || err1 != nil || err2 != nil || a < 1 || b > 65535 || a > b {
		return PortRange{}, fmt.Errorf("--service-ports: want LO-HI within 1-65535, such as 18100-18199, got %q", s)
	}
	return PortRange{a, b}, nil
}

func (r PortRange) String() string {
	if r.Lo == 0 {
		return "free ports"
	}
	return fmt.Sprintf("%d-%d", r.Lo, r.Hi)
}

// AllocatePorts gives each arm a port per name it lists (names[i] for arm i): all distinct,
// none of reserved (the arms' main ports), none in use now (FreePorts).
func AllocatePorts(r PortRange, names [][]string, reserved []int) ([]map[string]int, error) {
	out := make([]map[string]int, len(names))
	need := 0
	for i, list := range names {
		out[i] = map[string]int{}
		need += len(list)
	}
	if need == 0 {
		return out, nil
	}
	ports, err := FreePorts(r, need, reserved)
	if err != nil {
		return nil, fmt.Errorf("service.ports: %w", err)
	}
	for i, list := range names {
		for _, name := range list {
			out[i][name], ports = ports[0], ports[1:]
		}
	}
	return out, nil
}

// FreePorts is n ports free now on loopback, none of reserved: from r in order, or, when r is
// zero, from FreeRange starting at a random port, so that two hosts or tests choosing at once
// rarely meet. Every candidate is held open until all are chosen, so none is handed out twice.
func FreePorts(r PortRange, n int, reserved []int) ([]int, error) {
	if r.Lo != 0 {
		return takePorts(r, 0, n, reserved, &net.ListenConfig{})
	}
	from := FreeRange()
	// Probed without SO_REUSEADDR, as the kernel's own choice is: a port with connections still
	// in TIME_WAIT (an earlier service's) is passed over, since a service that binds without it
	// would be refused it. A range the host names keeps Go's default, so that a small range is
	// not used up by the runs just before.
	return takePorts(from, rand.IntN(from.Hi-from.Lo+1), n, reserved, &net.ListenConfig{Control: withoutReuseAddr})
}

// takePorts probes from's ports from start on, wrapping around, until n are held.
func takePorts(from PortRange, start, n int, reserved []int, probe *net.ListenConfig) ([]int, error) {
	span := from.Hi - from.Lo + 1
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < span && len(ports) < n; i++ {
		port := from.Lo + (start+i)%span
		if slices.Contains(reserved, port) {
			continue
		}
		if l, err := probe.Listen(context.Background(), "tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			held = append(held, l)
			ports = append(ports, port)
		}
	}
	if len(ports) < n {
		return nil, fmt.Errorf("%d ports needed, only %d free in %s", n, len(ports), from)
	}
	return ports, nil
}

func withoutReuseAddr(_, _ string, c syscall.RawConn) error {
	var err error
	if cerr := c.Control(func(fd uintptr) {
		err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 0)
	}); cerr != nil {
		return cerr
	}
	return err
}

// FreeRange is where free ports come from: outside the kernel's ephemeral range
// (net.ipv4.ip_local_port_range; freeRange). A port inside it, free when chosen, is any
// outgoing connection's to take before its service binds it
// (docs/design/0033-ports-outside-the-ephemeral-range.md).
func FreeRange() PortRange {
	ephemeralLo, ephemeralHi := 32768, 60999 // Linux's default
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			lo, errLo := strconv.Atoi(f[0])
			hi, errHi := strconv.Atoi(f[1])
			if errLo == nil && errHi == nil {
				ephemeralLo, ephemeralHi = lo, hi
			}
		}
	}
	return freeRange(ephemeralLo, ephemeralHi)
}

// freeRange is 10000 up to the ephemeral range [lo, hi], or above it where less than 2000 ports
// lie below, or from 10000 on where it leaves no room on either side.
func freeRange(lo, hi int) PortRange {
	const floor, enough = 10000, 2000
	switch {
	case lo-floor >= enough:
		return PortRange{floor, lo - 1}
	case 65535-hi >= enough:
		return PortRange{hi + 1, 65535}
	default:
		return PortRange{floor, 65535}
	}
}

// Listener is a socket listening on a port: its owner and its inode (0 when /proc does not say).
type Listener struct {
	UID   uint32
	Inode uint64
}

// Listeners lists the sockets that listen on port (any address, IPv4 or IPv6), from
// /proc/net/tcp and tcp6: who a connection to the port would reach.
func Listeners(port int) []Listener {
	var out []Listener
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(f[1], ":")
			p, err := strconv.ParseUint(hexPort, 16, 32)
			if !ok || err != nil || int(p) != port {
				continue
			}
			uid, err := strconv.ParseUint(f[7], 10, 32)
			if err != nil {
				continue
			}
			inode, _ := strconv.ParseUint(f[9], 10, 64)
			out = append(out, Listener{UID: uint32(uid), Inode: inode})
		}
	}
	return out
}

// ListenerUIDs lists the users owning a socket that listens on port, each once.
func ListenerUIDs(port int) []uint32 {
	var uids []uint32
	for _, l := range Listeners(port) {
		if !slices.Contains(uids, l.UID) {
			uids = append(uids, l.UID)
		}
	}
	return uids
}

// PortTakenError is a start that found one of its service's ports held by another process: the
// service was not started, and starting it again fails the same way until that process lets
// the port go.
type PortTakenError struct {
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
	return fmt.Sprintf("port %d (%s) is already in use by another process (%s); stop it or configure another port", e.Port, e.Var, held)
}

func (e *PortTakenError) Unwrap() error { return e.Err }

// PortHolder describes the processes listening on port, from /proc: "pid 123 (python3)". Only
// the process's name, not its command line nor its user: the message may reach a pull request's
// public check run, and another service's arguments may hold its secrets. What /proc does not
// show (another user's file descriptors, to an unprivileged perf-host) is "another process"; ""
// when nothing could be read.
func PortHolder(port int) string {
	var holders []string
	for _, l := range Listeners(port) {
		pids := socketPids(l.Inode)
		if len(pids) == 0 {
			holders = append(holders, "another process")
			continue
		}
		for _, pid := range pids {
			holders = append(holders, fmt.Sprintf("pid %d (%s)", pid, processName(pid)))
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
