package service

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

func redis(name string) contract.Dependency {
	v := contract.PortVariable(name)
	return contract.Dependency{Name: name, Command: []string{"/usr/bin/redis-server", "--port", "$" + v, "--dir", "$STATE_DIR"}, Ready: contract.DependencyReady{TCP: v}}
}

// Every bad dependency or port_env names its field and says what is expected.
func TestDependenciesAndPortEnvNameTheField(t *testing.T) {
	ok := contract.ServiceSpec{Command: []string{"./bin/ratelimit"}, PortEnv: "GRPC_PORT", Ports: []string{"http"},
		Env:          map[string]string{"PORT": "$PORT_HTTP", "REDIS_URL": "127.0.0.1:${PORT_REDIS}", "RUNTIME_ROOT": "$STATE_DIR/runtime"},
		Dependencies: []contract.Dependency{redis("redis")}}
	with := func(change func(*contract.ServiceSpec)) contract.ServiceSpec {
		s := ok
		s.Env = maps.Clone(ok.Env)
		s.Dependencies = slices.Clone(ok.Dependencies)
		change(&s)
		return s
	}
	cases := []struct {
		name string
		spec contract.ServiceSpec
		want string // "" = valid
	}{
		{"ratelimit's own", ok, ""},
		{"ready by command", with(func(s *contract.ServiceSpec) {
			s.Dependencies[0].Ready = contract.DependencyReady{Command: []string{"/usr/bin/redis-cli", "-p", "$PORT_REDIS", "ping"}}
		}), ""},
		{"a dependency with a port of its own", with(func(s *contract.ServiceSpec) {
			s.Dependencies[0].Ports = []string{"redis_admin"}
			s.Dependencies[0].Ready.TCP = "PORT_REDIS_ADMIN"
		}), ""},
		{"name clashes with a port", with(func(s *contract.ServiceSpec) { s.Dependencies[0] = redis("http") }),
			`service.dependencies[0].name: "http" is service.ports[0] already`},
		{"two dependencies of one name", with(func(s *contract.ServiceSpec) { s.Dependencies = append(s.Dependencies, redis("redis")) }),
			`service.dependencies[1].name: "redis" is service.dependencies[0].name already`},
		{"a dependency's port clashes with another's name", with(func(s *contract.ServiceSpec) {
			s.Dependencies = append(s.Dependencies, redis("cache"))
			s.Dependencies[1].Ports = []string{"redis"}
		}), `service.dependencies[1].ports[0]: "redis" is service.dependencies[0].name already`},
		{"bad name", with(func(s *contract.ServiceSpec) { s.Dependencies[0].Name = "Redis" }), `service.dependencies[0].name: must be a lowercase name`},
		{"ready names an undeclared port", with(func(s *contract.ServiceSpec) { s.Dependencies[0].Ready.TCP = "PORT_HTTP" }),
			`service.dependencies[0].ready.tcp: "PORT_HTTP" is not a port of this dependency: name one of PORT_REDIS`},
		{"ready names a port by its name", with(func(s *contract.ServiceSpec) { s.Dependencies[0].Ready.TCP = "redis" }),
			`service.dependencies[0].ready.tcp: "redis" is not a port of this dependency`},
		{"no ready", with(func(s *contract.ServiceSpec) { s.Dependencies[0].Ready = contract.DependencyReady{} }),
			`service.dependencies[0].ready: required: {tcp: PORT_REDIS}`},
		{"both readies", with(func(s *contract.ServiceSpec) { s.Dependencies[0].Ready.Command = []string{"/bin/true"} }),
			`service.dependencies[0].ready: one of tcp or command, not both`},
		{"no command", with(func(s *contract.ServiceSpec) { s.Dependencies[0].Command = nil }), `service.dependencies[0].command: required`},
		{"the service's port in a dependency", with(func(s *contract.ServiceSpec) {
			s.Dependencies[0].Command = []string{"./bin/proxy", "--upstream", ":${PORT}"}
		}),
			`service.dependencies[0].command[2]: ":${PORT}": $PORT is the service's port, not a dependency's`},
		{"an undeclared port in a dependency", with(func(s *contract.ServiceSpec) { s.Dependencies[0].Command = []string{"./x", "$PORT_DB"} }),
			`service.dependencies[0].command[1]: "$PORT_DB": $PORT_DB is not a port of service.ports or service.dependencies`},
		{"a dependency's env sets the host's", with(func(s *contract.ServiceSpec) { s.Dependencies[0].Env = map[string]string{"STATE_DIR": "/"} }),
			`service.dependencies[0].env.STATE_DIR: set by the host (PATH, HOME, PORT_<NAME> and STATE_DIR are the host's)`},
		{"a dependency's own PORT, from its port", with(func(s *contract.ServiceSpec) { s.Dependencies[0].Env = map[string]string{"PORT": "$PORT_REDIS"} }), ""},
		{"a dependency's env names $PORT", with(func(s *contract.ServiceSpec) { s.Dependencies[0].Env = map[string]string{"UPSTREAM": "$PORT"} }),
			`service.dependencies[0].env.UPSTREAM: $PORT is the service's port`},
		{"a relative program without ./", with(func(s *contract.ServiceSpec) { s.Dependencies[0].Command = []string{"bin/redis-server"} }),
			`service.dependencies[0].command[0]: a relative program must start with ./`},
		{"five dependencies", with(func(s *contract.ServiceSpec) {
			s.Dependencies = []contract.Dependency{redis("a"), redis("b"), redis("c"), redis("d"), redis("e")}
		}), `service.dependencies: at most 4, got 5`},
		{"port_env is the host's", with(func(s *contract.ServiceSpec) { s.PortEnv = "STATE_DIR" }), `service.port_env: "STATE_DIR" is set by the host already`},
		{"port_env is a PORT_ variable", with(func(s *contract.ServiceSpec) { s.PortEnv = "PORT_GRPC" }), `service.port_env: "PORT_GRPC" is set by the host already`},
		{"port_env is no name", with(func(s *contract.ServiceSpec) { s.PortEnv = "GRPC-PORT" }), `service.port_env: must be a variable name`},
		{"env sets port_env", with(func(s *contract.ServiceSpec) { s.Env["GRPC_PORT"] = "1" }),
			`service.env.GRPC_PORT: set by the host (PATH, HOME, GRPC_PORT, PORT_<NAME> and STATE_DIR are the host's)`},
		{"env sets PORT while the host owns it", with(func(s *contract.ServiceSpec) { s.PortEnv = "" }),
			`service.env.PORT: set by the host (PATH, HOME, PORT,`},
		{"env names an undeclared port", with(func(s *contract.ServiceSpec) { s.Env["PEER"] = "$PORT_PEER" }),
			`service.env.PEER: "$PORT_PEER": $PORT_PEER is not a port of service.ports or service.dependencies`},
		{"ready_timeout_seconds", with(func(s *contract.ServiceSpec) { s.ReadyTimeoutSeconds = 601 }), `service.ready_timeout_seconds: must be in (0, 600], got 601`},
	}
	for _, c := range cases {
		err := Validate(&c.spec)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%s: %v; want %s…", c.name, err, c.want)
		}
	}
	s := ok
	Validate(&s)
	if s.ReadyTimeoutSeconds != 30 || s.PortEnv != "GRPC_PORT" {
		t.Errorf("defaults: %+v", s)
	}
	s = contract.ServiceSpec{Command: []string{"./s"}}
	Validate(&s)
	if s.PortEnv != "PORT" {
		t.Errorf("port_env default: %q", s.PortEnv)
	}
}

// With port_env, the main port goes in its variable and PORT is env's; env values expand as
// the argv does. A dependency gets no main port, STATE_DIR of its own, and every PORT_<NAME>.
func TestPortEnvAndEnvValuesAndTheDependencysEnvironment(t *testing.T) {
	in := Instance{Dir: "/h/work", Port: 8002, Ports: map[string]int{"http": 38001, "redis": 38002}, StateDir: "/h/state"}
	spec := contract.ServiceSpec{PortEnv: "GRPC_PORT", Env: map[string]string{"PORT": "$PORT_HTTP", "REDIS_URL": "127.0.0.1:${PORT_REDIS}", "RUNTIME_ROOT": "$STATE_DIR/rt", "PRICE": "$5"}}
	cmd, err := in.Command(spec, []string{"./bin/ratelimit", "--grpc=$PORT"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/h/work", "GRPC_PORT=8002", "PORT_HTTP=38001", "PORT_REDIS=38002", "STATE_DIR=/h/state",
		"PORT=38001", "PRICE=$5", "REDIS_URL=127.0.0.1:38002", "RUNTIME_ROOT=/h/state/rt"}
	if !slices.Equal(cmd.Env, want) || !slices.Equal(cmd.Args, []string{"./bin/ratelimit", "--grpc=8002"}) {
		t.Errorf("env %q argv %q, want env %q", cmd.Env, cmd.Args, want)
	}
	d := redis("redis")
	d.Env = map[string]string{"REDIS_HOME": "$STATE_DIR"}
	dcmd, err := DependencyCommand(d, in.DependencyInstance("redis"), d.Command)
	if err != nil {
		t.Fatal(err)
	}
	wantD := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/h/work", "PORT_HTTP=38001", "PORT_REDIS=38002", "STATE_DIR=/h/state/.dependencies/redis", "REDIS_HOME=/h/state/.dependencies/redis"}
	if !slices.Equal(dcmd.Env, wantD) || !slices.Equal(dcmd.Args, []string{"/usr/bin/redis-server", "--port", "38002", "--dir", "/h/state/.dependencies/redis"}) {
		t.Errorf("dependency env %q argv %q, want env %q", dcmd.Env, dcmd.Args, wantD)
	}
	if got := contract.ServicePortNames(contract.ServiceSpec{Ports: []string{"http"}, Dependencies: []contract.Dependency{{Name: "redis", Ports: []string{"bus"}}}}); !slices.Equal(got, []string{"http", "redis", "bus"}) {
		t.Errorf("ServicePortNames: %q", got)
	}
}

// A TCP ready check passes once something listens, and says why it did not.
func TestWaitTCP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := WaitTCP(context.Background(), port, time.Second, nil); err != nil {
		t.Errorf("listening: %v", err)
	}
	l.Close()
	err = WaitTCP(context.Background(), port, 200*time.Millisecond, nil)
	if want := fmt.Sprintf("not ready after 200ms: nothing accepted a TCP connection on 127.0.0.1:%d (last: dial tcp 127.0.0.1:%d: connect: connection refused)", port, port); err == nil || err.Error() != want {
		t.Errorf("closed: %v; want %s", err, want)
	}
	exited := make(chan struct{})
	close(exited)
	if err := WaitTCP(context.Background(), port, time.Minute, exited); err == nil || err.Error() != "exited before it was ready" {
		t.Errorf("exited: %v", err)
	}
}
