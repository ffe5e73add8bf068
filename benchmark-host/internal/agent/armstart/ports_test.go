package armstart

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
)

// A port another process listens on fails the start before the service runs, naming the port,
// its variable and who holds it; a free one passes.
func TestATakenPortFailsTheStartNamingItsHolder(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	s := &Start{Arm: &arm.Arm{Name: "champion", Port: port}, Name: "champion", SHA: "aaaaaaa"}
	err = s.portsFree()
	var taken *PortTakenError
	if !errors.As(err, &taken) || taken.Port != port || taken.Var != "PORT" {
		t.Fatalf("a start on a taken port: %v; want a *PortTakenError for port %d (PORT)", err, port)
	}
	for _, want := range []string{
		fmt.Sprintf("champion aaaaaaa: port %d (PORT) is already in use by another process (held by pid %d (", port, os.Getpid()),
		"), user ",
		"; stop it or configure another port",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	l.Close()
	if err := s.portsFree(); err != nil {
		t.Errorf("a start on a free port: %v", err)
	}
}
