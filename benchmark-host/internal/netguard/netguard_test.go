package netguard

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestParseLineReadsAddressesPortsStateAndOwner(t *testing.T) {
	s, ok := parseLine("   3: 0100007F:1F41 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000   998        0 4242 1 0 20 4 30 10 -1")
	if !ok || s.Local.String() != "127.0.0.1:8001" || s.Remote.String() != "127.0.0.1:54000" || s.State != 1 || s.UID != 998 {
		t.Fatalf("%+v %v", s, ok)
	}
	s, ok = parseLine("   0: 00000000000000000000000001000000:1F42 00000000000000000000000001000000:A000 01 0:0 00:0 0 1000 0 1 1")
	if !ok || s.Local.String() != "[::1]:8002" || s.UID != 1000 {
		t.Fatalf("%+v %v", s, ok)
	}
}

// Real sockets of this process: a listener "of the arm" and two clients; the clients' owner is
// this process's uid, so one uid plays both sides and allowed decides.
func TestForeignNamesConnectionsThatAnotherUserOpened(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, _ := l.Accept()
	defer s.Close()
	socks, err := ReadSockets()
	if err != nil {
		t.Fatal(err)
	}
	uid := uint32(os.Getuid())
	// The arm is another user than the client: with the client's uid allowed, nothing is foreign…
	arm := uid + 1
	for i := range socks {
		if socks[i].Local.String() == l.Addr().String() {
			socks[i].UID = arm // the listener and the connection it accepted
		}
	}
	if got := Foreign(socks, arm, uid); len(got) != 0 {
		t.Fatalf("the allowed client counted as foreign: %+v", got)
	}
	// …and without it, the connection is named with its owner.
	got := Foreign(socks, arm)
	if len(got) != 1 || got[0].Remote.String() != c.LocalAddr().String() || !strings.Contains(got[0].Peer, "uid") {
		t.Fatalf("foreign: %+v", got)
	}
}

func TestRulesGiveEachArmItsOwnChainAndPorts(t *testing.T) {
	got := rules("perf_gate", 998, []int{18101, 8002, 18101})
	for _, want := range []string{
		"add element inet perf_gate ports_998 { 8002, 18101 }",
		"add rule inet perf_gate out_998 meta skuid 998 jump arm_998",
		"add rule inet perf_gate arm_998 meta l4proto { tcp, udp } th dport @ports_998 accept",
		"add rule inet perf_gate arm_998 meta l4proto tcp counter reject with tcp reset",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if err := ValidTable("perf gate"); err == nil {
		t.Error("a table name with a space was accepted")
	}
}

// The rules through the real nft, as root: nobody reaches its own port and not another.
func TestGuardKeepsAUserToItsOwnPorts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("nft needs CAP_NET_ADMIN (root in CI)")
	}
	if _, err := os.Stat(Nft); err != nil {
		t.Skip("nftables is not installed")
	}
	g := Guard{Table: "perf_gate_unit"}
	defer exec.Command(Nft, "delete", "table", "inet", g.Table).Run()
	own, other := listen(t), listen(t)
	const nobody = 65534
	if err := g.Allow(nobody, []int{port(own)}); err != nil {
		t.Fatal(err)
	}
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	try := func(l net.Listener) error {
		return exec.Command("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", port(l))).Run()
	}
	if err := try(own); err != nil {
		t.Errorf("nobody could not reach its own port: %v", err)
	}
	if err := try(other); err == nil {
		t.Error("nobody reached a port not its own")
	}
	if n, err := g.Refused(nobody); err != nil || n < 1 {
		t.Errorf("refused counter %d, %v", n, err)
	}
}

func listen(t *testing.T) net.Listener {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l
}

func port(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }
