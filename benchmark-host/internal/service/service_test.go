package service

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

func TestValidateNamesTheField(t *testing.T) {
	cases := []struct {
		spec contract.ServiceSpec
		want string // "" = valid
	}{
		{contract.ServiceSpec{Command: []string{"/usr/bin/etcd", "--listen-client-urls", "http://127.0.0.1:$PORT", "--listen-peer-urls", "http://127.0.0.1:${PORT_PEER}"}, Ports: []string{"peer"}}, ""},
		{contract.ServiceSpec{Command: []string{"sh", "-c", "exec ./server --port $PORT --home $HOME"}}, ""},
		{contract.ServiceSpec{Command: []string{"./s"}, Setup: []string{"./bin/migrate", "--dir", "$STATE_DIR"}}, ""},
		{contract.ServiceSpec{Command: []string{"./s", "--admin=:$PORT_ADMIN"}, Ports: []string{"peer"}},
			`service.command[1]: "--admin=:$PORT_ADMIN": $PORT_ADMIN is not a port of service.ports or service.dependencies ($PORT, $PORT_PEER, $STATE_DIR expand here)`},
		{contract.ServiceSpec{Command: []string{"./s"}, Setup: []string{"./seed", "$PORT_DB"}},
			`service.setup[1]: "$PORT_DB": $PORT_DB is not a port of service.ports or service.dependencies ($PORT, $STATE_DIR expand here)`},
		{contract.ServiceSpec{Command: []string{"./s"}, Setup: []string{"bin/seed"}}, `service.setup[0]: a relative program must start with ./, got "bin/seed"`},
		{contract.ServiceSpec{Command: []string{"./s"}, Setup: []string{""}}, "service.setup[0]: the program to run"},
		{contract.ServiceSpec{Command: []string{"./s"}, Env: map[string]string{"PORT_PEER": "1"}}, "service.env.PORT_PEER: set by the host"},
		{contract.ServiceSpec{Command: []string{"./s"}, Env: map[string]string{"STATE_DIR": "/tmp"}}, "service.env.STATE_DIR: set by the host"},
		{contract.ServiceSpec{Command: []string{"./s"}, Env: map[string]string{"HOME": "/root"}}, "service.env.HOME: set by the host"},
		{contract.ServiceSpec{Command: []string{"./s"}, Env: map[string]string{"A=B": "1"}}, "service.env.A=B: must be a variable name"},
		{contract.ServiceSpec{Command: []string{"./s"}, Ports: []string{"peer", "Admin"}}, `service.ports[1]: must be a lowercase name`},
		{contract.ServiceSpec{Command: []string{"./s"}, Ports: []string{"peer", "peer"}}, `service.ports[1]: "peer" is named twice`},
		{contract.ServiceSpec{Command: []string{"./s"}, Ports: strings.Split("a b c d e f g h i", " ")}, `service.ports: at most 8 names, got 9`},
		{contract.ServiceSpec{Command: []string{"./s"}, State: "shared"}, `service.state: must be "fresh" or "persistent", got "shared"`},
		{contract.ServiceSpec{Command: []string{"./s"}, SetupTimeoutSeconds: 4000}, `service.setup_timeout_seconds: must be in (0, 1800], got 4000`},
	}
	for _, c := range cases {
		err := Validate(&c.spec)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.spec, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%v: %v; want %s…", c.spec, err, c.want)
		}
	}
	s := contract.ServiceSpec{Command: []string{"./s"}}
	Validate(&s)
	if s.State != "fresh" || s.SetupTimeoutSeconds != 60 || s.HealthPath != "/health" || s.HealthTimeoutSeconds != 30 {
		t.Errorf("defaults: %+v", s)
	}
}

// The documented environment, and nothing of perf-host's own: PATH, HOME (the working copy),
// PORT, PORT_<NAME>, STATE_DIR, then service.env.
func TestCommandExpandsTheArgvAndSetsTheDocumentedEnvironment(t *testing.T) {
	t.Setenv("SECRET", "perf-host's own")
	in := Instance{Dir: "/h/arms/champion/work", Port: 8001, Ports: map[string]int{"peer": 38211, "admin": 38212}, StateDir: "/h/arms/champion/state"}
	spec := contract.ServiceSpec{Env: map[string]string{"GOMAXPROCS": "2"}}
	cmd, err := in.Command(spec, []string{"/usr/bin/etcd", "--peer=http://127.0.0.1:$PORT_PEER", "--data-dir", "${STATE_DIR}/etcd", "$HOME"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/usr/bin/etcd", "--peer=http://127.0.0.1:38211", "--data-dir", "/h/arms/champion/state/etcd", "$HOME"}; !slices.Equal(cmd.Args, want) {
		t.Errorf("argv %q, want %q", cmd.Args, want)
	}
	want := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/h/arms/champion/work", "PORT=8001", "PORT_ADMIN=38212", "PORT_PEER=38211",
		"STATE_DIR=/h/arms/champion/state", "GOMAXPROCS=2"}
	if !slices.Equal(cmd.Env, want) || cmd.Dir != in.Dir {
		t.Errorf("env %q in %s, want %q", cmd.Env, cmd.Dir, want)
	}
	if got := in.Describe(); got != "PORT=8001 PORT_ADMIN=38212 PORT_PEER=38211 STATE_DIR=/h/arms/champion/state" {
		t.Errorf("Describe: %s", got)
	}
}

// A container image's build runs the command in the image (Container), with the host's variables
// and service.env but not the host's PATH and HOME; without an image, a command is required.
func TestCommandRunsInTheImageOrNeedsAnArgv(t *testing.T) {
	in := Instance{Dir: "/h/arms/challenger/work", Port: 8002, StateDir: "/h/arms/challenger/state"}
	spec := contract.ServiceSpec{Env: map[string]string{"GOMAXPROCS": "2"}}
	if _, err := in.Command(spec, nil); err == nil || !strings.HasPrefix(err.Error(), "service.command: required for a build that is not a container image") {
		t.Errorf("no argv, no image: %v", err)
	}
	var gotArgv, gotEnv []string
	in.Container = func(argv, env []string) (*exec.Cmd, error) {
		gotArgv, gotEnv = argv, env
		return exec.Command("/usr/sbin/runc", "run"), nil
	}
	cmd, err := in.Command(spec, []string{"./bin/server", "--port=$PORT"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PORT=8002", "STATE_DIR=/h/arms/challenger/state", "GOMAXPROCS=2"}
	if !slices.Equal(gotArgv, []string{"./bin/server", "--port=8002"}) || !slices.Equal(gotEnv, want) || cmd.Dir != in.Dir || !cmd.SysProcAttr.Setsid {
		t.Errorf("container got argv %q env %q; command %v in %s", gotArgv, gotEnv, cmd.Args, cmd.Dir)
	}
	if _, err := in.Command(spec, nil); err != nil || len(gotArgv) != 0 {
		t.Errorf("no argv with an image (its entrypoint runs): %v, argv %q", err, gotArgv)
	}
}

// freeBlock finds n consecutive ports that are free now, inside FreeRange, where free mode
// chooses and no outgoing connection takes one: the machine's other tests hold ports of their
// own, and a range test must know which of its ports are free.
func freeBlock(t *testing.T, n int) int {
	r := FreeRange()
	for attempt := 0; attempt < 50; attempt++ {
		first, err := FreePorts(PortRange{}, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		lo := first[0]
		free := lo+n-1 <= r.Hi
		for p := lo; free && p < lo+n; p++ {
			if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err != nil {
				free = false
			} else {
				l.Close()
			}
		}
		if free {
			return lo
		}
	}
	t.Fatalf("no %d consecutive free ports found in %v", n, r)
	return 0
}

func TestAllocatePortsNeverCollide(t *testing.T) {
	lo := freeBlock(t, 10)
	taken := lo + 3
	busy, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(taken))
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, r := range []PortRange{{}, {lo, lo + 9}} {
		main := []int{lo, taken + 1}
		got, err := AllocatePorts(r, [][]string{{"peer", "admin"}, {"peer", "admin", "metrics"}}, main)
		if err != nil {
			t.Fatalf("%v: %v", r, err)
		}
		seen := map[int]bool{}
		for _, arm := range got {
			for _, p := range arm {
				if seen[p] || p == taken || slices.Contains(main, p) || (r.Lo > 0 && (p < r.Lo || p > r.Hi)) {
					t.Errorf("%v: port %d given twice, busy, a main port or outside the range: %v", r, p, got)
				}
				seen[p] = true
			}
		}
		if len(got[0]) != 2 || len(got[1]) != 3 {
			t.Errorf("%v: %v", r, got)
		}
	}
	if _, err := AllocatePorts(PortRange{taken, taken + 1}, [][]string{{"peer"}, {"peer"}}, nil); err == nil || err.Error() != fmt.Sprintf("service.ports: 2 ports needed, only 1 free in %d-%d", taken, taken+1) {
		t.Errorf("a range too small: %v", err)
	}
	if _, err := ParsePortRange("9000-8000"); err == nil {
		t.Error("a reversed range was accepted")
	}
}

// Free ports come from outside the kernel's ephemeral range, where no outgoing connection takes
// one between the choice and the service's bind (docs/design/0033-ports-outside-the-ephemeral-range.md).
func TestFreePortsComeFromOutsideTheEphemeralRange(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skip("no /proc/sys/net/ipv4/ip_local_port_range")
	}
	var ephemeralLo, ephemeralHi int
	if _, err := fmt.Sscan(string(b), &ephemeralLo, &ephemeralHi); err != nil {
		t.Fatal(err)
	}
	r := FreeRange()
	if r != freeRange(ephemeralLo, ephemeralHi) {
		t.Fatalf("FreeRange %v, not the rule's for the ephemeral range %d-%d", r, ephemeralLo, ephemeralHi)
	}
	if r.Lo <= ephemeralHi && r.Hi >= ephemeralLo {
		t.Skipf("this machine's ephemeral range %d-%d leaves no room outside it: free ports are %v", ephemeralLo, ephemeralHi, r)
	}
	ports, err := FreePorts(PortRange{}, 50, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < r.Lo || p > r.Hi || seen[p] {
			t.Errorf("port %d given twice or outside %v: %v", p, r, ports)
		}
		seen[p] = true
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(ports[0]))
	if err != nil {
		t.Fatalf("port %d is not free once chosen: %v", ports[0], err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if local := c.LocalAddr().(*net.TCPAddr).Port; local >= r.Lo && local <= r.Hi {
		t.Errorf("an outgoing connection took port %d, inside FreeRange %v", local, r)
	}
}

func TestFreeRangeLiesOutsideTheEphemeralRange(t *testing.T) {
	for _, c := range []struct {
		lo, hi int
		want   PortRange
	}{
		{32768, 60999, PortRange{10000, 32767}}, // Linux's default
		{12000, 60999, PortRange{10000, 11999}}, // 2000 below: enough
		{11999, 60999, PortRange{61000, 65535}}, // 1999 below: above it
		{11999, 63535, PortRange{63536, 65535}}, // 2000 above: enough
		{11999, 63536, PortRange{10000, 65535}}, // no room either side
		{1024, 65535, PortRange{10000, 65535}},
	} {
		if got := freeRange(c.lo, c.hi); got != c.want {
			t.Errorf("ephemeral %d-%d: %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
}

// Free mode probes as the kernel's choice does, without SO_REUSEADDR: a port whose server closed
// a connection first, and so holds it in TIME_WAIT, is passed over; a range the host names keeps
// Go's default and takes it.
func TestFreePortsPassOverAPortInTimeWait(t *testing.T) {
	port := freeBlock(t, 1)
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	s.Close() // the server closes first: its end, on port, waits in TIME_WAIT
	io.Copy(io.Discard, c)
	c.Close()
	l.Close()
	only := PortRange{port, port}
	if got, err := takePorts(only, 0, 1, nil, &net.ListenConfig{Control: withoutReuseAddr}); err == nil {
		t.Errorf("free mode took port %d in TIME_WAIT: %v", port, got)
	}
	if got, err := FreePorts(only, 1, nil); err != nil || !slices.Equal(got, []int{port}) {
		t.Errorf("a named range: %v, %v; want port %d", got, err, port)
	}
}

func TestListenerUIDsFindsWhoListens(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if got := ListenerUIDs(port); !slices.Equal(got, []uint32{uint32(os.Getuid())}) {
		t.Errorf("listening: %v, want our uid %d", got, os.Getuid())
	}
	l.Close()
	if got := ListenerUIDs(port); len(got) != 0 {
		t.Errorf("closed: %v", got)
	}
}
