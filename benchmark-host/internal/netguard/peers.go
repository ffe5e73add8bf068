package netguard

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"os/user"
	"strconv"
	"strings"
)

// Socket is one line of /proc/net/tcp or tcp6: a TCP socket of this network namespace.
type Socket struct {
	Local, Remote netip.AddrPort
	State         int
	UID           uint32
}

// TCP states as /proc/net/tcp writes them.
const (
	stateTimeWait = 0x06
	stateListen   = 0x0A
)

// ReadSockets reads every TCP socket of the host (readable by any user: no privilege needed).
func ReadSockets() ([]Socket, error) {
	var out []Socket
	for _, path := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(path)
		if err != nil {
			if os.IsNotExist(err) && strings.HasSuffix(path, "6") {
				continue // no IPv6
			}
			return nil, err
		}
		s := bufio.NewScanner(f)
		s.Scan() // the header
		for s.Scan() {
			if sock, ok := parseLine(s.Text()); ok {
				out = append(out, sock)
			}
		}
		f.Close()
		if err := s.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return out, nil
}

func parseLine(line string) (Socket, bool) {
	f := strings.Fields(line)
	if len(f) < 8 {
		return Socket{}, false
	}
	local, ok1 := parseAddr(f[1])
	remote, ok2 := parseAddr(f[2])
	state, err1 := strconv.ParseUint(f[3], 16, 8)
	uid, err2 := strconv.ParseUint(f[7], 10, 32)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		return Socket{}, false
	}
	return Socket{Local: local, Remote: remote, State: int(state), UID: uint32(uid)}, true
}

// parseAddr reads "0100007F:1F41": the address as the kernel's 32-bit words in host order
// (little-endian here), then the port in hex.
func parseAddr(s string) (netip.AddrPort, bool) {
	a, p, ok := strings.Cut(s, ":")
	raw, err := hex.DecodeString(a)
	port, perr := strconv.ParseUint(p, 16, 16)
	if !ok || err != nil || perr != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, false
	}
	for i := 0; i < len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), true
}

// Conn is a connection an arm accepted from someone it should not serve.
type Conn struct {
	Local, Remote netip.AddrPort
	// Who holds the other end: "user perf-gate-challenger (uid 998)", or "a remote host".
	Peer string
}

// Foreign lists the connections that uid's listeners accepted and that none of allowed opened:
// the other end is a socket of another user of this host, or a host elsewhere. A connection
// whose other end is already closed (or in TIME_WAIT, which keeps no owner) is not counted:
// who opened it cannot be told.
func Foreign(socks []Socket, uid uint32, allowed ...uint32) []Conn {
	listening := map[uint16]bool{}
	byEnds := map[[2]netip.AddrPort]Socket{}
	local := map[netip.Addr]bool{}
	for _, s := range socks {
		local[s.Local.Addr()] = true
		if s.State == stateListen && s.UID == uid {
			listening[s.Local.Port()] = true
		}
		byEnds[[2]netip.AddrPort{s.Local, s.Remote}] = s
	}
	var out []Conn
	for _, s := range socks {
		if s.UID != uid || s.State == stateListen || s.State == stateTimeWait || !listening[s.Local.Port()] {
			continue
		}
		peer, found := byEnds[[2]netip.AddrPort{s.Remote, s.Local}]
		switch {
		case found && peer.State != stateTimeWait && peer.UID != uid && !contains(allowed, peer.UID):
			out = append(out, Conn{Local: s.Local, Remote: s.Remote, Peer: userName(peer.UID)})
		case !found && !s.Remote.Addr().IsLoopback() && !local[s.Remote.Addr()]:
			out = append(out, Conn{Local: s.Local, Remote: s.Remote, Peer: "a remote host " + s.Remote.Addr().String()})
		}
	}
	return out
}

func contains(list []uint32, x uint32) bool {
	for _, v := range list {
		if v == x {
			return true
		}
	}
	return false
}

func userName(uid uint32) string {
	id := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(id); err == nil {
		return "user " + u.Username + " (uid " + id + ")"
	}
	return "uid " + id
}
