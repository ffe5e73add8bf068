// Package netguard keeps each arm to its own ports on the host's network: a packet an arm's
// user sends to the host itself (through lo) must go to one of the arm's own ports, its
// service's or its dependencies', or answer a connection someone opened to the arm. The other
// arm's ports, perf-host, sshd and every other service of the host are out of its reach; the
// load generator, which runs as perf-host's user, reaches both arms. See
// docs/design/0001-network-between-arms.md for why packet filtering by uid (nftables meta
// skuid) and not a network namespace or a cgroup match.
//
// The rules live in one nftables table (--net-table), one base chain and one port set per arm,
// rewritten in one transaction each time the arm starts; perf-host writes them through Debian's
// nft with CAP_NET_ADMIN, handed to that one child process as an ambient capability.
package netguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/privilege"
)

// Nft is Debian's nft (package nftables).
const Nft = "/usr/sbin/nft"

// Guard is the host's table of arm rules; a zero Table is no guard.
type Guard struct{ Table string }

// ValidTable checks a --net-table value: nft's identifiers, and "" for off.
func ValidTable(name string) error {
	if name == "" {
		return nil
	}
	for i, c := range name {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') || i >= 64 {
			return fmt.Errorf("--net-table: want 1-64 letters, digits and underscores, starting with a letter (such as perf_gate), got %q", name)
		}
	}
	return nil
}

// Allow replaces uid's rules: from now on it may reach, on the host, only ports (and answer
// whoever reaches it). The counter of what it was refused starts again from zero.
func (g Guard) Allow(uid uint32, ports []int) error {
	if g.Table == "" {
		return nil
	}
	return g.nft(rules(g.Table, uid, ports), nil)
}

// rules is the nft script that gives uid its own ports. A base chain per arm (every base chain
// on a hook sees every packet, so each arm's rules are replaced without touching the other's);
// packets without a socket of uid (the kernel's resets, replies to others) never jump into it.
func rules(table string, uid uint32, ports []int) string {
	u := strconv.FormatUint(uint64(uid), 10)
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("add table inet %s", table)
	line("add set inet %s ports_%s { type inet_service; }", table, u)
	line("flush set inet %s ports_%s", table, u)
	if len(ports) > 0 {
		list := make([]string, 0, len(ports))
		for _, p := range slices.Sorted(slices.Values(ports)) {
			list = append(list, strconv.Itoa(p))
		}
		line("add element inet %s ports_%s { %s }", table, u, strings.Join(slices.Compact(list), ", "))
	}
	line("add chain inet %s arm_%s", table, u)
	line("flush chain inet %s arm_%s", table, u)
	line("add chain inet %s out_%s { type filter hook output priority 0; policy accept; }", table, u)
	line("flush chain inet %s out_%s", table, u)
	line("add rule inet %s out_%s meta skuid %s jump arm_%s", table, u, u, u)
	// Answers to connections others opened to the arm: the reply direction only. In the original
	// direction an entry conntrack still holds as established, though it missed the close and the
	// sockets are gone, would let a bare SYN with the same ports through (the arm's own
	// connections pass by their destination port below; docs/design/0001-network-between-arms.md).
	line("add rule inet %s arm_%s ct direction reply ct state established,related accept", table, u)
	// Not the host: the arm's traffic elsewhere is not the other arm's business.
	line(`add rule inet %s arm_%s oifname != "lo" accept`, table, u)
	line("add rule inet %s arm_%s meta l4proto { tcp, udp } th dport @ports_%s accept", table, u, u)
	// What its servers send back, also when conntrack reads a late segment as invalid (out of
	// its window after a stall): from its own ports, anything but the bare SYN that opens a
	// connection, so a client socket bound to its own port cannot open one elsewhere.
	line("add rule inet %s arm_%s tcp sport @ports_%s tcp flags & (syn | ack) != syn accept", table, u, u)
	// Refused rather than dropped: a dropped SYN is sent again for two minutes, a reset ends
	// the connect at once (ECONNREFUSED).
	line("add rule inet %s arm_%s meta l4proto tcp counter reject with tcp reset", table, u)
	line("add rule inet %s arm_%s counter reject", table, u)
	return b.String()
}

// Refused is how many packets uid sent to the host outside its ports since its last Allow.
func (g Guard) Refused(uid uint32) (int64, error) {
	var out bytes.Buffer
	if err := g.nft("", &out, "-j", "list", "chain", "inet", g.Table, "arm_"+strconv.FormatUint(uint64(uid), 10)); err != nil {
		return 0, err
	}
	var doc struct {
		Nftables []struct {
			Rule *struct {
				Expr []struct {
					Counter *struct{ Packets int64 } `json:"counter"`
				} `json:"expr"`
			} `json:"rule"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		return 0, fmt.Errorf("nft -j list chain: %w", err)
	}
	n, counters := int64(0), 0
	for _, o := range doc.Nftables {
		if o.Rule != nil {
			for _, e := range o.Rule.Expr {
				if e.Counter != nil {
					n += e.Counter.Packets
					counters++
				}
			}
		}
	}
	if counters == 0 {
		return 0, errors.New("nft: the arm's chain has no counter")
	}
	return n, nil
}

// Check says whether the guard can work on this host: nft is there and perf-host may run it
// with CAP_NET_ADMIN. It writes nothing.
func (g Guard) Check() error {
	if g.Table == "" {
		return errors.New("off (--net-table is empty)")
	}
	if _, err := os.Stat(Nft); err != nil {
		return fmt.Errorf("%s: %v (apt-get install nftables; install.sh does)", Nft, err)
	}
	return g.nft("", nil, "list", "tables")
}

// nft runs nft with script on its stdin (args: -f -) or with args, CAP_NET_ADMIN raised for it
// alone when perf-host is not root.
func (g Guard) nft(script string, stdout io.Writer, args ...string) error {
	if len(args) == 0 {
		args = []string{"-f", "-"}
	}
	cmd := exec.Command(Nft, args...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.Stdin = strings.NewReader(script)
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &errOut
	if os.Geteuid() != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{AmbientCaps: []uintptr{uintptr(privilege.NetAdmin)}}
	}
	if err := cmd.Run(); err != nil {
		if errors.Is(err, syscall.EPERM) {
			return fmt.Errorf("nft: perf-host lacks CAP_NET_ADMIN (install.sh grants it with setcap): %v", err)
		}
		return fmt.Errorf("nft %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return nil
}
