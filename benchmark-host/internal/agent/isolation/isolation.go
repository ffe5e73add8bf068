// Package isolation sets up what keeps the two arms apart from each other and from the host:
// a user, a cgroup and CPUs per arm, groups of perf-host's own (the load generator, the
// champion supervisor), and the guards on what they share besides the CPUs (the network, the
// disk, memory, the directories and IPC every user of a host shares). It is set up once per perf-host process, the first time it is asked for.
package isolation

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
// set up is in its Info.Notes (and Arms says it). Its checks start programs in the arms: only
// a holder of the host lock (a run, a promotion) or the champion supervisor asks for it.
func (l *Lazy) Get() *Isolation {
	l.once.Do(func() { l.iso = setUp(l.cfg, l.armsDir, true) })
	return l.iso
}

// Describe is the isolation as Get sets it up, except that it starts nothing in the arms, for
// status, which any client may ask while a run uses them: that arm-exec starts the arms'
// programs in namespaces of their own is then each run's pre-flight check
// (docs/design/0032-status-starts-nothing-in-the-arms.md).
func (l *Lazy) Describe() *Isolation { return setUp(l.cfg, l.armsDir, false) }

// Arms is the host's isolation, or why its arms cannot run.
func (l *Lazy) Arms() (*Isolation, error) {
	iso := l.Get()
	return iso, iso.err
}

// setUp sets up the isolation; start: whether its checks may start programs in the arms.
func setUp(cfg config.Config, armsDir string, start bool) *Isolation {
	b := &builder{cfg: cfg, armsDir: armsDir, iso: &Isolation{}}
	info := &b.iso.Info
	info.Notes = []string{}
	info.Capabilities = privilege.Permitted()
	canEnter := os.Geteuid() == 0 || slices.Contains(info.Capabilities, privilege.DACOverride.String())
	b.setup = cgroup.Open(cfg.Cgroup, canEnter)
	if cfg.CgroupV1 != "" {
		b.setup.OpenV1(strings.Split(cfg.CgroupV1, ","))
	}
	info.Cgroup = b.setup.CgroupSetup
	loadgenCPUs, armCPUs := b.place()
	self, err := arm.Current()
	b.check(err)
	b.ownGroups(self, loadgenCPUs)
	b.arms(armCPUs)
	b.limitProcs()
	if b.iso.Champion != nil && b.iso.Challenger != nil {
		b.check(setUpGuards(cfg, b.iso, b.setup))
		setUpPrivateMounts(cfg, b.iso, start)
	}
	b.noteSharing(self)
	b.iso.err = errors.Join(b.errs...)
	if b.iso.err != nil {
		info.Notes = append(info.Notes, "arms cannot run: "+b.iso.err.Error())
	}
	if err := arm.BecomeSubreaper(); err != nil {
		info.Notes = append(info.Notes, err.Error())
	}
	return b.iso
}

// builder sets up an Isolation step by step, keeping every error: arms that cannot run say
// all of what is wrong at once.
type builder struct {
	cfg     config.Config
	armsDir string
	setup   *cgroup.Setup
	iso     *Isolation
	errs    []error
}

func (b *builder) check(err error) { b.errs = append(b.errs, err) }

// place reads the CPUs of the load generator and of the arms, which must not overlap, and
// records how they are placed.
func (b *builder) place() (loadgenCPUs, armCPUs placement.CPUs) {
	loadgenCPUs, err := cpus("--loadgen-cpus", b.cfg.LoadgenCPUs)
	b.check(err)
	armCPUs, err = cpus("--arm-cpus", b.cfg.ArmCPUs)
	b.check(err)
	if loadgenCPUs.Overlaps(armCPUs) {
		b.check(fmt.Errorf("--loadgen-cpus %s and --arm-cpus %s overlap: the load generator needs CPUs of its own", loadgenCPUs, armCPUs))
	}
	p := contract.Placement{Method: "none", LoadgenCPUs: loadgenCPUs.String(), ArmCPUs: armCPUs.String()}
	if len(loadgenCPUs)+len(armCPUs) > 0 {
		p.Method = "sched_setaffinity"
		if b.setup.Has("cpuset") {
			p.Method = "cpuset"
		}
	}
	b.iso.Info.Placement = p
	return loadgenCPUs, armCPUs
}

// group is perf-host's group name, on cpus and with at most maxProcs tasks (0: no bound);
// nil without a cgroup subtree.
func (b *builder) group(name string, cpus placement.CPUs, maxProcs int) *cgroup.Group {
	g, err := b.setup.Group(name)
	if err != nil || g == nil {
		b.check(err)
		return nil
	}
	if len(cpus) > 0 && g.Has("cpuset") {
		b.check(g.SetCPUs(cpus.String()))
	}
	if maxProcs > 0 && g.Has("pids") {
		b.check(g.SetMaxProcs(maxProcs))
	}
	return g
}

// ownGroups places perf-host's own processes: the executor with the load generator on its
// CPUs, the supervisor in a group of its own.
func (b *builder) ownGroups(self arm.Identity, loadgenCPUs placement.CPUs) {
	b.iso.Loadgen = &arm.Arm{Name: groupLoadgen, User: self, Group: b.group(groupLoadgen, loadgenCPUs, 0), CPUs: loadgenCPUs}
	b.iso.Supervisor = &arm.Arm{Name: groupSuper, User: self, Group: b.group(groupSuper, nil, 0)}
}

// arms sets up the champion and the challenger arm, each as its user, in its group, with its
// home; they are isolated from each other only as users of their own.
func (b *builder) arms(armCPUs placement.CPUs) {
	b.iso.Info.Arms = map[string]contract.ArmIsolation{}
	dedicated := b.cfg.ChampionUser != b.cfg.ChallengerUser
	b.iso.Champion = b.arm(contract.Champion, b.cfg.ChampionUser, b.cfg.ChampionPort, armCPUs, dedicated)
	b.iso.Challenger = b.arm(contract.Challenger, b.cfg.ChallengerUser, b.cfg.ChallengerPort, armCPUs, dedicated)
}

func (b *builder) arm(name, user string, port int, cpus placement.CPUs, dedicated bool) *arm.Arm {
	id, err := arm.Lookup(user)
	if err != nil {
		b.check(fmt.Errorf("the %s arm: %w", name, err))
	}
	x := &arm.Arm{Name: name, User: id, Dedicated: dedicated && err == nil && !id.Self, Port: port,
		Home: filepath.Join(b.armsDir, name), Group: b.group(name, cpus, b.cfg.ArmMaxProcs), CPUs: cpus}
	if err == nil {
		b.check(ensureHome(x))
	}
	ai := contract.ArmIsolation{User: id.Name, UID: id.UID, DedicatedUser: x.Dedicated, Port: port, Home: x.Home}
	if x.Group != nil {
		ai.Cgroup = x.Group.Path
	}
	b.iso.Info.Arms[name] = ai
	return x
}

// limitProcs bounds the tasks of each arm: by pids.max, else (arms of users of their own) by
// RLIMIT_NPROC.
func (b *builder) limitProcs() {
	mp := &b.iso.Info.MaxProcs
	*mp = contract.MaxProcs{Limit: b.cfg.ArmMaxProcs, By: "none"}
	switch {
	case b.setup.Has("pids"):
		mp.By = "pids.max"
	case b.iso.Challenger.Dedicated && b.iso.Champion.Dedicated:
		mp.By = "RLIMIT_NPROC"
		// Rlimits are per process and inherited: lowering ours bounds every arm this process
		// starts (counted per user, so per arm); perf-host's own user runs a handful.
		lim := syscall.Rlimit{Cur: uint64(b.cfg.ArmMaxProcs), Max: uint64(b.cfg.ArmMaxProcs)}
		b.check(syscall.Setrlimit(rlimitNproc, &lim))
	}
}

// noteSharing says what the arms share that they should not: perf-host's user, each other's
// user, or no cgroups.
func (b *builder) noteSharing(self arm.Identity) {
	info := &b.iso.Info
	switch {
	case self.Name == b.cfg.ChampionUser || self.Name == b.cfg.ChallengerUser:
		info.Notes = append(info.Notes, fmt.Sprintf("the arms run as perf-host's own user %s (local mode): they are not isolated from perf-host or each other", self.Name))
	case b.cfg.ChampionUser == b.cfg.ChallengerUser:
		info.Notes = append(info.Notes, fmt.Sprintf("both arms run as %s: the challenger can signal and read the champion (a host installed before per-arm users? re-run install.sh)", b.cfg.ChampionUser))
	}
	if info.Cgroup.Mode == cgroup.ModeNone {
		info.Notes = append(info.Notes, info.Cgroup.Note)
	}
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
