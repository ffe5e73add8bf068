package service

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// A port another process listens on fails the start before the service runs, naming the port,
// its variable and who holds it by process name; a free one starts.
func TestATakenPortFailsTheStartNamingItsHolder(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	in := Instance{Dir: t.TempDir(), Port: port}
	log := Log{Path: in.Dir + "/log"}
	spec := contract.ServiceSpec{Command: []string{"/bin/true"}}
	_, err = Start("champion", spec, in, log, func(c *exec.Cmd) error { return c.Start() })
	var taken *PortTakenError
	if !errors.As(err, &taken) || taken.Port != port || taken.Var != "PORT" {
		t.Fatalf("a start on a taken port: %v; want a *PortTakenError for port %d (PORT)", err, port)
	}
	comm, _ := os.ReadFile("/proc/self/comm")
	want := fmt.Sprintf("champion: port %d (PORT) is already in use by another process (held by pid %d (%s))", port, os.Getpid(), strings.TrimSpace(string(comm)))
	if !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "; stop it or configure another port") {
		t.Errorf("the error says:\n%v\nwant it to start %q", err, want)
	}
	if _, serr := os.Stat(log.Path); serr == nil {
		t.Error("the service was started: it has a log")
	}
	l.Close()
	p, err := Start("champion", spec, in, log, func(c *exec.Cmd) error { return c.Start() })
	if err != nil {
		t.Fatalf("a start on a free port: %v", err)
	}
	<-p.Exited()
}
