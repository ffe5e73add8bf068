package contract

// Dependency is a service one arm runs its own instance of beside the service under test: a
// Redis, a database. Each arm starts it fresh in its working copy, as its user and in its
// cgroup, before setup and the service; it stops with the arm.
type Dependency struct {
	// Names the dependency in logs and gives it its port: $PORT_<NAME> (redis → PORT_REDIS),
	// which the service's command and env may use too.
	Name string `json:"name" limit:"port_name"`
	// An argv list, never through a shell: a program of the build (./bin/redis-server) or of
	// the host (/usr/bin/redis-server). Expanded as the service's command, with STATE_DIR its
	// own directory.
	Command []string `json:"command" limit:"at_least_one"`
	// How the host knows it is ready, before anything else starts.
	Ready DependencyReady `json:"ready"`
	// More ports of its own, as service.ports: each $PORT_<NAME>.
	Ports []string `json:"ports,omitempty" limit:"port_names"`
	// Added to its environment, expanded as the service's env is.
	Env map[string]string `json:"env,omitempty"`
}

// DependencyReady is one of: a port that accepts a TCP connection, or a command that exits 0.
type DependencyReady struct {
	// The variable of one of the dependency's ports, as command names it: PORT_REDIS.
	TCP string `json:"tcp,omitempty" limit:"env_name"`
	// An argv list run as the dependency is (its environment, as the arm) until it exits 0.
	Command []string `json:"command,omitempty"`
}

// DependencyStateDir is where under the service's STATE_DIR a dependency keeps its own.
const DependencyStateDir = ".dependencies"

// DependencyStart is how one dependency of an arm started for a run, and what it used: its
// CPU and memory are the arm's too (in the slices' service_* fields), listed here on their own.
type DependencyStart struct {
	Name string `json:"name" limit:"port_name"`
	// PORT_<NAME> of its name and of each of its ports, as it got them.
	Ports map[string]int `json:"ports"`
	// From its start to its ready check passing.
	ReadySeconds float64 `json:"ready_seconds" limit:"amount"`
	// CPU time of its processes from ready until the arm stopped, and their memory then;
	// absent when they could not be read.
	CPUSeconds *float64 `json:"cpu_seconds,omitempty" limit:"amount"`
	RSSBytes   *int64   `json:"rss_bytes,omitempty" limit:"count"`
}
