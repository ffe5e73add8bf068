// Package config is the benchmark host's configuration: perf-host's flags, and the same
// flags rendered again for the detached processes perf-host starts.
package config

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/history"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/netguard"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/release"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

// Config is the host's configuration, from perf-host's flags.
type Config struct {
	Root            string
	ChampionUser    string // the champion arm runs as this user
	ChallengerUser  string // the challenger arm runs as this user
	Cgroup          string // the cgroup v2 directory delegated to perf-host ("" = none)
	CgroupV1        string // a hybrid host's cgroup v1 subtrees for memory and cpuset, comma-separated
	LoadgenCPUs     string // cpulist for the load generator ("" = anywhere)
	ArmCPUs         string // cpulist both arms share ("" = anywhere)
	ArmMaxProcs     int
	MaxIdleArmCores float64
	MaxRunSeconds   float64
	HoldCPUsAwake   bool // hold PM QoS cpu_dma_latency at 0 while measuring
	ChampionPort    int
	ChallengerPort  int
	ServicePorts    string        // the range the arms' extra ports come from ("" = free ports)
	NetTable        string        // nftables table keeping the arms to their own ports ("" = none)
	ArmDiskBytes    uint64        // size of each arm's own filesystem
	ArmMemoryBytes  int64         // memory.max of each arm's cgroup
	LockWait        time.Duration // how long run/promote wait for a busy host
	DeployLimits    release.Limits
	MinFreeDisk     uint64  // bytes
	MinFreeMemory   uint64  // bytes
	MaxForeignCores float64 // a slice where anything but the run used more CPU cores is disturbed
	SettleSeconds   float64 // how long a run waits for the host to quiet down first
	MaxArmLogBytes  int64   // the most of an arm's log kept per start
	KeepReleases    int
	KeepRuns        int
	// The most bytes the history keeps (docs/design/0023-history.md).
	HistoryBoundBytes int64
}

// DefaultMaxForeignCores is --max-foreign-cores when the host sets none: well above what a
// quiet host spends beside a run (its sshd, the `wait` streaming progress, the kernel), and
// under a neighbour's busy loop on one core (docs/design/0004-foreign-load.md).
const DefaultMaxForeignCores = 0.25

// BindFlags registers the host's configuration flags; Flags() gives them back, so that the
// detached processes perf-host starts run with the same configuration.
func BindFlags(fs *flag.FlagSet) *Config {
	c := &Config{DeployLimits: release.DefaultLimits}
	root := os.Getenv("PERF_GATE_ROOT")
	if root == "" {
		root = "/var/lib/perf-gate"
	}
	fs.StringVar(&c.Root, "root", root, "state directory (env PERF_GATE_ROOT)")
	fs.StringVar(&c.ChampionUser, "champion-user", "perf-gate-champion", "user the champion arm runs as")
	fs.StringVar(&c.ChallengerUser, "challenger-user", "perf-gate-challenger", "user the challenger arm runs as")
	fs.Func("service-user", "run both arms as this one user: local mode, or a host installed before per-arm users (the arms are then not isolated from each other)", func(u string) error {
		c.ChampionUser, c.ChallengerUser = u, u
		return nil
	})
	fs.StringVar(&c.Cgroup, "cgroup", "", "the cgroup v2 directory delegated to perf-host (install.sh sets it up); empty: arms are contained by user id only")
	fs.StringVar(&c.CgroupV1, "cgroup-v1", "", "on a hybrid host, the cgroup v1 directories delegated to perf-host that hold the arms' memory limit and CPUs, comma-separated (install.sh sets them up)")
	fs.StringVar(&c.LoadgenCPUs, "loadgen-cpus", "", "CPUs for the load generator, e.g. 0-1 (empty: anywhere)")
	fs.StringVar(&c.ArmCPUs, "arm-cpus", "", "CPUs both arms share, e.g. 2-14 (empty: anywhere)")
	fs.IntVar(&c.ArmMaxProcs, "arm-max-procs", 1024, "most tasks an arm may run (pids.max, else RLIMIT_NPROC of its user)")
	fs.Float64Var(&c.MaxIdleArmCores, "max-idle-arm-cores", 0.25, "a slice is invalid when the arm not being measured used more CPU cores than this")
	fs.BoolVar(&c.HoldCPUsAwake, "hold-cpus-awake", false, "hold PM QoS /dev/cpu_dma_latency at 0 while measuring: no CPU sleeps in a deep idle state (steadier tails on a host whose idle CPUs halt; see benchmark-host/README.md for what it costs)")
	fs.Float64Var(&c.MaxRunSeconds, "max-run-seconds", 3600, "refuse a plan that would hold the host longer")
	fs.IntVar(&c.ChampionPort, "champion-port", 8001, "port of the champion")
	fs.IntVar(&c.ChallengerPort, "challenger-port", 8002, "port of the challenger")
	fs.StringVar(&c.ServicePorts, "service-ports", "", "where each arm's extra ports (service.ports) come from, LO-HI such as 18100-18199 (empty: free ports outside the kernel's ephemeral range)")
	fs.StringVar(&c.NetTable, "net-table", "perf_gate", "nftables table (family inet) that keeps each arm to its own ports; empty: no packet filter (the host still drops the pairs of slices where an arm served anyone but the load generator)")
	fs.Uint64Var(&c.ArmDiskBytes, "arm-disk-bytes", 2<<30, "size of each arm's own filesystem (install.sh mounts one per arm of this size; pre-flight checks it)")
	fs.Int64Var(&c.ArmMemoryBytes, "arm-memory-bytes", 4<<30, "the memory limit of each arm's cgroup, its dependencies and its /dev/shm included (memory.max, or on a hybrid host the v1 memory controller's)")
	fs.DurationVar(&c.LockWait, "lock-wait", 10*time.Second, "how long run, promote, rollback and gc wait for a busy host")
	fs.Int64Var(&c.DeployLimits.MaxCompressed, "max-deploy-bytes", release.DefaultLimits.MaxCompressed, "largest tarball deploy accepts")
	fs.Uint64Var(&c.MinFreeDisk, "min-free-disk", 1<<30, "refuse runs with less free disk (bytes)")
	fs.Uint64Var(&c.MinFreeMemory, "min-free-memory", 256<<20, "refuse runs with less available memory (bytes)")
	fs.Float64Var(&c.MaxForeignCores, "max-foreign-cores", DefaultMaxForeignCores, "a slice is disturbed when anything but the run's arms and load generator used more CPU cores than this on the host")
	fs.Float64Var(&c.SettleSeconds, "settle-seconds", 30, "how long a run first waits for the host's CPUs to be as quiet as --max-foreign-cores; past it the run is flagged")
	fs.Int64Var(&c.MaxArmLogBytes, "max-arm-log-bytes", service.DefaultMaxLogBytes, "the most of an arm's log kept per start: its first and last halves, with the cut said (0: no cap)")
	fs.IntVar(&c.KeepReleases, "keep-releases", 5, "releases gc keeps besides the champion and previous champion")
	fs.IntVar(&c.KeepRuns, "keep-runs", 50, "runs gc keeps")
	fs.Int64Var(&c.HistoryBoundBytes, "history-bound-bytes", history.DefaultBoundBytes, "the most bytes the history (history.jsonl) keeps; past it the oldest entries go")
	return c
}

// absolute is path made absolute against the working directory, or path when that is unknown.
func absolute(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// Flags renders the configuration as command-line flags.
func (c Config) Flags() []string {
	return []string{
		// Absolute: the detached processes start in the root, not in the caller's directory.
		"--root", absolute(c.Root),
		"--champion-user", c.ChampionUser,
		"--challenger-user", c.ChallengerUser,
		"--cgroup", c.Cgroup,
		"--cgroup-v1", c.CgroupV1,
		"--loadgen-cpus", c.LoadgenCPUs,
		"--arm-cpus", c.ArmCPUs,
		"--arm-max-procs", strconv.Itoa(c.ArmMaxProcs),
		"--max-idle-arm-cores", fmt.Sprint(c.MaxIdleArmCores),
		"--max-run-seconds", fmt.Sprint(c.MaxRunSeconds),
		"--hold-cpus-awake=" + strconv.FormatBool(c.HoldCPUsAwake),
		"--champion-port", strconv.Itoa(c.ChampionPort),
		"--challenger-port", strconv.Itoa(c.ChallengerPort),
		"--service-ports", c.ServicePorts,
		"--net-table", c.NetTable,
		"--arm-disk-bytes", strconv.FormatUint(c.ArmDiskBytes, 10),
		"--arm-memory-bytes", strconv.FormatInt(c.ArmMemoryBytes, 10),
		"--lock-wait", c.LockWait.String(),
		"--max-deploy-bytes", strconv.FormatInt(c.DeployLimits.MaxCompressed, 10),
		"--min-free-disk", strconv.FormatUint(c.MinFreeDisk, 10),
		"--min-free-memory", strconv.FormatUint(c.MinFreeMemory, 10),
		"--max-foreign-cores", fmt.Sprint(c.MaxForeignCores),
		"--settle-seconds", fmt.Sprint(c.SettleSeconds),
		"--max-arm-log-bytes", strconv.FormatInt(c.MaxArmLogBytes, 10),
		"--keep-releases", strconv.Itoa(c.KeepReleases),
		"--keep-runs", strconv.Itoa(c.KeepRuns),
		"--history-bound-bytes", strconv.FormatInt(c.HistoryBoundBytes, 10),
	}
}

// Validate checks the flags that are more than a number: the port range and the table name.
func (c Config) Validate() error {
	if _, err := service.ParsePortRange(c.ServicePorts); err != nil {
		return err
	}
	return netguard.ValidTable(c.NetTable)
}

// PortRange is --service-ports, checked by Validate.
func (c Config) PortRange() service.PortRange {
	r, _ := service.ParsePortRange(c.ServicePorts)
	return r
}

// MainPorts are the champion and challenger ports, which no extra port may take.
func (c Config) MainPorts() []int { return []int{c.ChampionPort, c.ChallengerPort} }

// ArmLog is an arm's log at path, capped at --max-arm-log-bytes.
func (c Config) ArmLog(path string) service.Log {
	return service.Log{Path: path, MaxBytes: c.MaxArmLogBytes}
}
