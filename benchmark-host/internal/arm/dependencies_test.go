package arm

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

// A dependency runs as the arm's user with a STATE_DIR of its own, is ready before anything
// else starts, outlives what setup leaves (which is stopped), counts in the arm's processes and
// stops with the arm. One never ready fails with its own log.
func TestDependenciesRunAsTheArmAndStopWithIt(t *testing.T) {
	const redis = "/usr/bin/redis-server"
	if _, err := os.Stat(redis); err != nil {
		t.Skip("needs Debian's redis-server")
	}
	a, dir := installedArm(t, "challenger", 18002)
	id := a.User
	ports, err := service.AllocatePorts(service.PortRange{}, [][]string{{"store"}}, []int{18002})
	if err != nil {
		t.Fatal(err)
	}
	spec := contract.ServiceSpec{SetupTimeoutSeconds: 5, ReadyTimeoutSeconds: 5,
		Setup: []string{"/bin/sh", "-c", "sleep 300 &"},
		Dependencies: []contract.Dependency{{Name: "store",
			Command: []string{redis, "--port", "$PORT_STORE", "--bind", "127.0.0.1", "--save", "", "--dir", "$STATE_DIR"},
			Ready:   contract.DependencyReady{Command: []string{"/usr/bin/redis-cli", "-p", "$PORT_STORE", "ping"}}}}}
	log := service.Log{Path: filepath.Join(dir, "challenger.log"), MaxBytes: 1 << 20}
	deps, err := a.StartDependencies(context.Background(), spec, ports[0], log)
	if err != nil {
		t.Fatal(err)
	}
	port := ports[0]["store"]
	if len(deps) != 1 || deps[0].Ports["PORT_STORE"] != port {
		t.Fatalf("started %+v", deps)
	}
	if uids := service.ListenerUIDs(port); !slices.Equal(uids, []uint32{id.UID}) {
		t.Errorf("the dependency listens as %v, want the arm's user %d", uids, id.UID)
	}
	if _, err := a.Setup(spec, ports[0], log); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, p := range a.Procs() {
		left = append(left, p.Cmdline)
	}
	if len(left) != 1 || !strings.HasPrefix(left[0], redis) {
		t.Errorf("after setup the arm runs %q; want its dependency alone", left)
	}
	if u := a.DependencyUsage()["store"]; u.RSSBytes == 0 {
		t.Errorf("the dependency's usage: %+v", u)
	}
	if out, _ := os.ReadFile(DependencyLog(log, "store").Path); !strings.Contains(string(out), "Ready to accept connections") {
		t.Errorf("its log:\n%s", out)
	}
	if err := a.Clear(); err != nil || len(OfUser(id.UID)) > 0 {
		t.Errorf("clear: %v; left %s", err, Describe(OfUser(id.UID)))
	}

	spec.Dependencies[0].Command = append(spec.Dependencies[0].Command, "--daemonize", "yes")
	_, err = a.StartDependencies(context.Background(), spec, ports[0], log)
	if err == nil || !strings.Contains(err.Error(), "(exited with status 0): a dependency must stay in the foreground, not daemonize") {
		t.Errorf("a dependency that daemonizes: %v", err)
	}
	a.Clear()

	spec.ReadyTimeoutSeconds = 0.5
	spec.Dependencies[0].Command = []string{"/bin/sh", "-c", "echo listening nowhere; exec sleep 30"}
	spec.Dependencies[0].Ready = contract.DependencyReady{TCP: "PORT_STORE"}
	_, err = a.StartDependencies(context.Background(), spec, ports[0], log)
	if err == nil || !strings.Contains(err.Error(), "dependency store: not ready after 500ms: nothing accepted a TCP connection") || !strings.HasSuffix(err.Error(), "listening nowhere") {
		t.Errorf("never ready: %v", err)
	}
	a.Clear()
	if left := OfUser(id.UID); len(left) > 0 {
		t.Errorf("after a dependency never ready, %s still runs", Describe(left))
	}
}
