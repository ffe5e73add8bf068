// Package isolation sets up what keeps the two arms apart from each other and from the host:
// a user, a cgroup and CPUs per arm, groups of perf-host's own (the load generator, the
// champion supervisor), and the guards on what they share besides the CPUs (the network, the
// disk, memory). It is set up once per perf-host process, the first time it is asked for.
package isolation

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/config"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/cgroup"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/netguard"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/placement"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/privilege"
)

// Names of perf-host's own groups, beside the arms'.
const (
	groupLoadgen = "loadgen"    // the run's executor, with the load generator inside it
	groupSuper   = "supervisor" // the champion supervisor
)

// Isolation is the host's arms and groups, set up once per process.
type Isolation struct {
	Info                 contract.Isolation
	Champion, Challenger *arm.Arm
	Loadgen, Supervisor  *arm.Arm        // perf-host's own processes, placed but not switched
	net                  *netguard.Guard // nil: the arms' network is not filtered (see Info.Network)
	err                  error           // arms that cannot run: the users are missing, the CPUs wrong
}

// Lazy is the host's isolation, set up the first time it is asked for: the verbs that only
// read the host's records (wait, result) never touch its cgroups or limits.
type Lazy struct {
	cfg     config.Config
	armsDir string // each arm's home is armsDir/NAME
	once    sync.Once
	iso     *Isolation
}

// NewLazy is the isolation of a host configured by cfg, whose arms live under armsDir.
func NewLazy(cfg config.Config, armsDir string) *Lazy {
	return &Lazy{cfg: cfg, armsDir: armsDir}
}

// Get sets up the cgroup subtree and the arms the first time it is asked; what could not be
// set up is in its Info.Notes (and Arms says it).
func (l *Lazy) Get() *Isolation {
	l.once.Do(func() { l.iso = setUp(l.cfg, l.armsDir) })
	return l.iso
}

// Arms is the host's isolation, or why its arms cannot run.
func (l *Lazy) Arms() (*Isolation, error) {
	iso := l.Get()
	return iso, iso.err
}

func setUp(cfg config.Config, armsDir string) *Isolation {
	iso := &Isolation{}
	info := &iso.Info
	info.Notes = []string{}
	info.Capabilities = privilege.Permitted()
	canEnter := os.Geteuid() == 0 || slices.Contains(info.Capabilities, privilege.DACOverride.String())
	setup := cgroup.Open(cfg.Cgroup, canEnter)
	info.Cgroup = setup.CgroupSetup
	var errs []error
	loadgenCPUs, err := cpus("--loadgen-cpus", cfg.LoadgenCPUs)
	errs = append(errs, err)
	armCPUs, err := cpus("--arm-cpus", cfg.ArmCPUs)
	errs = append(errs, err)
	if loadgenCPUs.Overlaps(armCPUs) {
		errs = append(errs, fmt.Errorf("--loadgen-cpus %s and --arm-cpus %s overlap: the load generator needs CPUs of its own", loadgenCPUs, armCPUs))
	}
	info.Placement = contract.Placement{Method: "none", LoadgenCPUs: loadgenCPUs.String(), ArmCPUs: armCPUs.String()}
	if len(loadgenCPUs)+len(armCPUs) > 0 {
		info.Placement.Method = "sched_setaffinity"
		if setup.Has("cpuset") {
			info.Placement.Method = "cpuset"
		}
	}
	self, err := arm.Current()
	errs = append(errs, err)
	group := func(name string, cpus placement.CPUs, maxProcs int) *cgroup.Group {
		g, err := setup.Group(name)
		if err != nil || g == nil {
			errs = append(errs, err)
			return nil
		}
		if len(cpus) > 0 && g.Has("cpuset") {
			errs = append(errs, g.SetCPUs(cpus.String()))
		}
		if maxProcs > 0 && g.Has("pids") {
			errs = append(errs, g.SetMaxProcs(maxProcs))
		}
		return g
	}
	iso.Loadgen = &arm.Arm{Name: groupLoadgen, User: self, Group: group(groupLoadgen, loadgenCPUs, 0), CPUs: loadgenCPUs}
	iso.Supervisor = &arm.Arm{Name: groupSuper, User: self, Group: group(groupSuper, nil, 0)}
	info.Arms = map[string]contract.ArmIsolation{}
	dedicated := cfg.ChampionUser != cfg.ChallengerUser
	for _, a := range []struct {
		name, user string
		port       int
		dst        **arm.Arm
	}{{contract.Champion, cfg.ChampionUser, cfg.ChampionPort, &iso.Champion}, {contract.Challenger, cfg.ChallengerUser, cfg.ChallengerPort, &iso.Challenger}} {
		id, err := arm.Lookup(a.user)
		if err != nil {
			errs = append(errs, fmt.Errorf("the %s arm: %w", a.name, err))
		}
		x := &arm.Arm{Name: a.name, User: id, Dedicated: dedicated && err == nil && !id.Self, Port: a.port,
			Home: filepath.Join(armsDir, a.name), Group: group(a.name, armCPUs, cfg.ArmMaxProcs), CPUs: armCPUs}
		if err == nil {
			errs = append(errs, ensureHome(x))
		}
		*a.dst = x
		ai := contract.ArmIsolation{User: id.Name, UID: id.UID, DedicatedUser: x.Dedicated, Port: a.port, Home: x.Home}
		if x.Group != nil {
			ai.Cgroup = x.Group.Path
		}
		info.Arms[a.name] = ai
	}
	info.MaxProcs = contract.MaxProcs{Limit: cfg.ArmMaxProcs, By: "none"}
	switch {
	case setup.Has("pids"):
		info.MaxProcs.By = "pids.max"
	case iso.Challenger.Dedicated && iso.Champion.Dedicated:
		info.MaxProcs.By = "RLIMIT_NPROC"
		// Rlimits are per process and inherited: lowering ours bounds every arm this process
		// starts (counted per user, so per arm); perf-host's own user runs a handful.
		lim := syscall.Rlimit{Cur: uint64(cfg.ArmMaxProcs), Max: uint64(cfg.ArmMaxProcs)}
		errs = append(errs, syscall.Setrlimit(rlimitNproc, &lim))
	}
	if iso.Champion != nil && iso.Challenger != nil {
		errs = append(errs, setUpGuards(cfg, iso, setup))
	}
	switch {
	case self.Name == cfg.ChampionUser || self.Name == cfg.ChallengerUser:
		info.Notes = append(info.Notes, fmt.Sprintf("the arms run as perf-host's own user %s (local mode): they are not isolated from perf-host or each other", self.Name))
	case !dedicated:
		info.Notes = append(info.Notes, fmt.Sprintf("both arms run as %s: the challenger can signal and read the champion (a host installed before per-arm users? re-run install.sh)", cfg.ChampionUser))
	}
	if info.Cgroup.Mode == cgroup.ModeNone {
		info.Notes = append(info.Notes, info.Cgroup.Note)
	}
	iso.err = errors.Join(errs...)
	if iso.err != nil {
		info.Notes = append(info.Notes, "arms cannot run: "+iso.err.Error())
	}
	if err := arm.BecomeSubreaper(); err != nil {
		info.Notes = append(info.Notes, err.Error())
	}
	return iso
}

// rlimitNproc is RLIMIT_NPROC, which package syscall does not name.
const rlimitNproc = 6

func cpus(flag, list string) (placement.CPUs, error) {
	c, err := placement.Parse(list)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if len(c) > 0 {
		online, err := placement.Online()
		if err == nil {
			err = c.Within(online)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
	}
	return c, nil
}

// ensureHome makes the arm's home directory when this process may (as root, or when the arm
// runs as perf-host's own user); otherwise install.sh must have made it.
func ensureHome(a *arm.Arm) error {
	if _, err := os.Lstat(a.Home); err == nil || (!a.User.Self && os.Geteuid() != 0) {
		return nil // Install checks owner and mode, and says to re-run install.sh
	}
	if err := os.Mkdir(a.Home, 0o700); err != nil {
		return err
	}
	return os.Chown(a.Home, int(a.User.UID), int(a.User.GID))
}

// Summary is the isolation in one line, for the run's progress log.
func (iso *Isolation) Summary() string {
	i := iso.Info
	arm := func(name string) string {
		a := i.Arms[name]
		return fmt.Sprintf("%s as %s (uid %d)", name, a.User, a.UID)
	}
	return fmt.Sprintf("%s, %s; cgroup %s; placement %s (load generator on %s, arms on %s); at most %d tasks per arm by %s",
		arm(contract.Champion), arm(contract.Challenger), i.Cgroup.Mode, i.Placement.Method, OrAny(i.Placement.LoadgenCPUs), OrAny(i.Placement.ArmCPUs), i.MaxProcs.Limit, i.MaxProcs.By)
}

// OrAny is a cpulist in words: "CPUs 2-5", or "any CPU" for none.
func OrAny(cpus string) string {
	if cpus == "" {
		return "any CPU"
	}
	return "CPUs " + cpus
}
