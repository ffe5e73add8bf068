package agent

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/release"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

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
	fs.StringVar(&c.LoadgenCPUs, "loadgen-cpus", "", "CPUs for the load generator, e.g. 0-1 (empty: anywhere)")
	fs.StringVar(&c.ArmCPUs, "arm-cpus", "", "CPUs both arms share, e.g. 2-14 (empty: anywhere)")
	fs.IntVar(&c.ArmMaxProcs, "arm-max-procs", 1024, "most tasks an arm may run (pids.max, else RLIMIT_NPROC of its user)")
	fs.Float64Var(&c.MaxIdleArmCores, "max-idle-arm-cores", 0.25, "a slice is invalid when the arm not being measured used more CPU cores than this")
	fs.BoolVar(&c.HoldCPUsAwake, "hold-cpus-awake", false, "hold PM QoS /dev/cpu_dma_latency at 0 while measuring: no CPU sleeps in a deep idle state (steadier tails on a host whose idle CPUs halt; see benchmark-host/README.md for what it costs)")
	fs.Float64Var(&c.MaxRunSeconds, "max-run-seconds", 3600, "refuse a plan that would hold the host longer")
	fs.IntVar(&c.ChampionPort, "champion-port", 8001, "port of the champion")
	fs.IntVar(&c.ChallengerPort, "challenger-port", 8002, "port of the challenger")
	fs.StringVar(&c.ServicePorts, "service-ports", "", "where each arm's extra ports (service.ports) come from, LO-HI such as 18100-18199 (empty: ports the kernel finds free)")
	fs.StringVar(&c.NetTable, "net-table", "perf_gate", "nftables table (family inet) that keeps each arm to its own ports; empty: no packet filter (the host still drops the pairs of slices where an arm served anyone but the load generator)")
	fs.Uint64Var(&c.ArmDiskBytes, "arm-disk-bytes", 2<<30, "size of each arm's own filesystem (install.sh mounts one per arm of this size; pre-flight checks it)")
	fs.Int64Var(&c.ArmMemoryBytes, "arm-memory-bytes", 4<<30, "memory.max of each arm's cgroup, its dependencies included (with cgroup v2's memory controller)")
	fs.DurationVar(&c.LockWait, "lock-wait", 10*time.Second, "how long run, promote, rollback and gc wait for a busy host")
	fs.Int64Var(&c.DeployLimits.MaxCompressed, "max-deploy-bytes", release.DefaultLimits.MaxCompressed, "largest tarball deploy accepts")
	fs.Uint64Var(&c.MinFreeDisk, "min-free-disk", 1<<30, "refuse runs with less free disk (bytes)")
	fs.Uint64Var(&c.MinFreeMemory, "min-free-memory", 256<<20, "refuse runs with less available memory (bytes)")
	fs.Float64Var(&c.MaxForeignCores, "max-foreign-cores", DefaultMaxForeignCores, "a slice is disturbed when anything but the run's arms and load generator used more CPU cores than this on the host")
	fs.Float64Var(&c.SettleSeconds, "settle-seconds", 30, "how long a run first waits for the host's CPUs to be as quiet as --max-foreign-cores; past it the run is flagged")
	fs.Int64Var(&c.MaxArmLogBytes, "max-arm-log-bytes", service.DefaultMaxLogBytes, "the most of an arm's log kept per start: its first and last halves, with the cut said (0: no cap)")
	fs.IntVar(&c.KeepReleases, "keep-releases", 5, "releases gc keeps besides the champion and previous champion")
	fs.IntVar(&c.KeepRuns, "keep-runs", 50, "runs gc keeps")
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
	}
}
