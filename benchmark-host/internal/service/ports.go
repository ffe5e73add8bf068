package service

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
)

// PortRange is where a service's extra ports (service.ports) come from: [Lo, Hi], or ports
// the kernel finds free when it is zero.
type PortRange struct{ Lo, Hi int }

// ParsePortRange reads --service-ports: "" (the kernel's free ports) or "LO-HI".
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
// none of reserved (the arms' main ports), none in use now. They are taken from the range in
// order, or from the kernel; every candidate is held open until all are chosen, so none is
// handed out twice.
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
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	var ports []int
	take := func(port int) {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			return
		}
		held = append(held, l)
		if got := l.Addr().(*net.TCPAddr).Port; !slices.Contains(reserved, got) {
			ports = append(ports, got)
		}
	}
	if r.Lo == 0 {
		for tries := 0; len(ports) < need && tries < need+len(reserved)+16; tries++ {
			take(0)
		}
	} else {
		for p := r.Lo; p <= r.Hi && len(ports) < need; p++ {
			if !slices.Contains(reserved, p) {
				take(p)
			}
		}
	}
	if len(ports) < need {
		return nil, fmt.Errorf("service.ports: %d ports needed, only %d free in %s", need, len(ports), r)
	}
	for i, list := range names {
		for _, name := range list {
			out[i][name], ports = ports[0], ports[1:]
		}
	}
	return out, nil
}

// ListenerUIDs lists the users owning a socket that listens on port (any address, IPv4 or
// IPv6), from /proc/net/tcp and tcp6: who a connection to the port would reach.
func ListenerUIDs(port int) []uint32 {
	var uids []uint32
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 8 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(f[1], ":")
			p, err := strconv.ParseUint(hexPort, 16, 32)
			if !ok || err != nil || int(p) != port {
				continue
			}
			if uid, err := strconv.ParseUint(f[7], 10, 32); err == nil && !slices.Contains(uids, uint32(uid)) {
				uids = append(uids, uint32(uid))
			}
		}
	}
	return uids
}
