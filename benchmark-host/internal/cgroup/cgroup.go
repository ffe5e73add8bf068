// Package cgroup drives the host's cgroup v2 subtree: one child group per arm (and one for the
// load generator, one for the champion supervisor), each started into with clone3's
// CLONE_INTO_CGROUP, stopped with cgroup.kill, and read for its CPU time and memory.
//
// The subtree is a directory perf-host may write: on systemd a unit with Delegate=yes
// (perf-gate-cgroups.service), elsewhere one install.sh creates under the cgroup v2 mount and
// gives to the CI user. perf-host enables the controllers it uses (cpu, cpuset, memory, pids)
// for its children where the subtree has them; on a hybrid host whose v2 mount has none of
// them, cgroup.procs, cgroup.kill and cpu.stat still work, and the rest falls back (see Setup).
package cgroup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// Modes of a Setup (see contract.CgroupSetup).
const (
	ModeControllers = contract.CgroupControllers
	ModeCore        = contract.CgroupCore
	ModeNone        = contract.CgroupNone
)

// Wanted are the controllers perf-host enables for its groups, when the subtree has them.
var Wanted = []string{"cpu", "cpuset", "memory", "pids"}

// Setup is the host's subtree as perf-host found it.
type Setup struct {
	contract.CgroupSetup
	v1 map[string]string // controller: the v1 subtree that stands in for it (see OpenV1)
}

const cgroup2Magic = 0x63677270

// Mount finds the cgroup v2 mount: /sys/fs/cgroup on a pure v2 host, /sys/fs/cgroup/unified on
// a hybrid one; "" when there is none.
func Mount() string {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) >= 3 && fields[2] == "cgroup2" {
			return fields[1]
		}
	}
	return ""
}

// Open inspects dir, the subtree perf-host was given (--cgroup), and enables the wanted
// controllers for its children. It never fails: a subtree it cannot use is ModeNone, and
// the note says why and what to do. canEnter says whether this process may start processes
// into the subtree from outside it (the kernel asks for write access to the common
// ancestor's cgroup.procs: root's, so root or CAP_DAC_OVERRIDE); inside it, it always may.
func Open(dir string, canEnter bool) *Setup {
	if dir == "" {
		note := "no cgroup subtree configured (--cgroup): arms are contained by their user ids; install.sh sets one up"
		if m := Mount(); m == "" {
			note = "no cgroup v2 mount on this host: arms are contained by their user ids; CPU from /proc"
		}
		return &Setup{CgroupSetup: contract.CgroupSetup{Mode: ModeNone, Controllers: []string{}, Note: note}}
	}
	none := func(format string, args ...any) *Setup {
		return &Setup{CgroupSetup: contract.CgroupSetup{Mode: ModeNone, Path: dir, Controllers: []string{}, Note: fmt.Sprintf(format, args...) + ": arms are contained by their user ids; CPU from /proc"}}
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return none("cgroup %s: %v (re-run install.sh)", dir, err)
	}
	if fs.Type != cgroup2Magic {
		return none("cgroup %s is not on a cgroup v2 file system", dir)
	}
	if err := syscall.Access(filepath.Join(dir, "cgroup.procs"), 2 /* W_OK */); err != nil {
		return none("cgroup %s is not writable by this user (%v; install.sh gives it to the CI user)", dir, err)
	}
	if !canEnter && !Inside(dir) {
		return none("perf-host lacks CAP_DAC_OVERRIDE to start processes into %s from outside it (re-run install.sh)", dir)
	}
	s := &Setup{CgroupSetup: contract.CgroupSetup{Mode: ModeCore, Path: dir, Controllers: []string{}}}
	available := strings.Fields(readString(filepath.Join(dir, "cgroup.controllers")))
	enabled := strings.Fields(readString(filepath.Join(dir, "cgroup.subtree_control")))
	var missing []string
	for _, c := range Wanted {
		switch {
		case slices.Contains(enabled, c):
			s.Controllers = append(s.Controllers, c)
		case !slices.Contains(available, c):
			missing = append(missing, c)
		case os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+c), 0) == nil:
			s.Controllers = append(s.Controllers, c)
		default:
			missing = append(missing, c+" (could not be enabled: processes in "+dir+" itself?)")
		}
	}
	if len(s.Controllers) > 0 {
		s.Mode = ModeControllers
	}
	switch {
	case len(missing) == 0:
		s.Note = "cgroup v2 " + dir + " with " + strings.Join(s.Controllers, ", ")
	case len(s.Controllers) == 0:
		s.Note = "cgroup v2 " + dir + " without controllers (a hybrid host?): membership, cgroup.kill and cpu.stat; processes bounded by RLIMIT_NPROC"
	default:
		s.Note = "cgroup v2 " + dir + " with " + strings.Join(s.Controllers, ", ") + "; missing " + strings.Join(missing, ", ")
	}
	return s
}

// Self is this process's cgroup v2 directory, "" when unknown.
func Self() string {
	mount := Mount()
	b, err := os.ReadFile("/proc/self/cgroup")
	if mount == "" || err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rel, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Join(mount, rel)
		}
	}
	return ""
}

// Inside reports whether this process runs in dir or below it.
func Inside(dir string) bool {
	self := Self()
	return self != "" && (self == dir || strings.HasPrefix(self, dir+"/"))
}

// Has reports whether a controller is enabled for perf-host's groups, in cgroup v2 or, for
// memory, cpuset and pids on a hybrid host, in v1.
func (s *Setup) Has(controller string) bool {
	return s.Mode != ModeNone && (slices.Contains(s.Controllers, controller) || s.v1[controller] != "")
}

// Group creates (if needed) and returns the child group name; nil with ModeNone.
func (s *Setup) Group(name string) (*Group, error) {
	if s.Mode == ModeNone {
		return nil, nil
	}
	p := filepath.Join(s.Path, name)
	if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("cgroup %s: %w", p, err)
	}
	g := &Group{Path: p, setup: s}
	return g, g.makeV1(name)
}

// Group is one cgroup v2 directory.
type Group struct {
	Path     string
	setup    *Setup
	cpus     string // cpuset.cpus as set, for a group made anew
	maxProcs int    // pids.max as set
	maxMem   int64  // memory.max as set
	v1       map[string]string
	// OOM kills counted in the directories this group replaced since ForgetOOMKills.
	oomCarried int64
}

// Has reports whether a controller is enabled in the group.
func (g *Group) Has(controller string) bool { return g.setup.Has(controller) }

// OpenDir opens the group's directory for CLONE_INTO_CGROUP; the caller closes it.
func (g *Group) OpenDir() (*os.File, error) {
	fd, err := syscall.Open(g.Path, oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("cgroup %s: %w", g.Path, err)
	}
	return os.NewFile(uintptr(fd), g.Path), nil
}

// Procs lists the processes in the group.
func (g *Group) Procs() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(g.Path, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}

// Kill kills every process in the group and its descendants with cgroup.kill (Linux 5.14+),
// which also catches processes forked while it runs, waits until the group is empty, and
// makes the group anew. It returns the processes still there after wait.
//
// Made anew because Linux 6.18 kills at once any process started into a cgroup with
// CLONE_INTO_CGROUP once cgroup.kill was used on that cgroup (it compares the kill counts of
// the parent's cgroup and the new one); a fresh group has never been killed.
func (g *Group) Kill(wait time.Duration) ([]int, error) {
	if procs, err := g.Procs(); err != nil || len(procs) == 0 {
		return procs, err
	}
	if err := os.WriteFile(filepath.Join(g.Path, "cgroup.kill"), []byte("1"), 0); err != nil {
		return nil, fmt.Errorf("cgroup.kill in %s: %w", g.Path, err)
	}
	deadline := time.Now().Add(wait)
	for {
		procs, err := g.Procs()
		if err != nil || len(procs) > 0 && time.Now().After(deadline) {
			return procs, err
		}
		// cgroup.procs no longer lists a task that is exiting, but the group stays populated
		// (and cannot be removed) until the task is gone.
		if len(procs) == 0 && (!g.populated() || time.Now().After(deadline)) {
			return nil, g.renew()
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// populated reads cgroup.events: whether any task, exiting ones included, is in the group.
func (g *Group) populated() bool {
	return strings.Contains(readString(filepath.Join(g.Path, "cgroup.events")), "populated 1")
}

// renew replaces the empty group by a fresh one with the same settings, its v1 directories too,
// and carries its count of OOM kills over.
func (g *Group) renew() error {
	if n, ok := g.oomKillsHere(); ok {
		g.oomCarried += n
	}
	for _, dir := range append([]string{g.Path}, g.V1Dirs()...) {
		if err := os.Remove(dir); err != nil {
			return fmt.Errorf("cgroup %s: making it anew after cgroup.kill: %w", dir, err)
		}
	}
	if err := os.Mkdir(g.Path, 0o755); err != nil {
		return fmt.Errorf("cgroup %s: making it anew after cgroup.kill: %w", g.Path, err)
	}
	errs := []error{g.makeV1(filepath.Base(g.Path))}
	if g.cpus != "" {
		errs = append(errs, g.SetCPUs(g.cpus))
	}
	if g.maxProcs > 0 {
		errs = append(errs, g.SetMaxProcs(g.maxProcs))
	}
	if g.maxMem > 0 {
		errs = append(errs, g.SetMemoryMax(g.maxMem))
	}
	return errors.Join(errs...)
}

// CPUUsageUs is the CPU time the group's processes have used, in µs (cpu.stat usage_usec,
// which cgroup v2 keeps with or without the cpu controller).
func (g *Group) CPUUsageUs() (uint64, error) { return CPUUsageUs(g.Path) }

// CPUUsageUs is the usage_usec of the cgroup v2 directory dir's cpu.stat.
func CPUUsageUs(dir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s/cpu.stat: no usage_usec", dir)
}

// MemoryBytes is memory.current (v1: memory.usage_in_bytes), when the memory controller is
// enabled.
func (g *Group) MemoryBytes() (uint64, bool) {
	file := filepath.Join(g.Path, "memory.current")
	switch {
	case g.v1["memory"] != "":
		file = filepath.Join(g.v1["memory"], "memory.usage_in_bytes")
	case !g.Has("memory"):
		return 0, false
	}
	v, err := strconv.ParseUint(strings.TrimSpace(readString(file)), 10, 64)
	return v, err == nil
}

// SetCPUs confines the group to cpus (cpuset.cpus), when the cpuset controller is enabled.
func (g *Group) SetCPUs(cpus string) error {
	g.cpus = cpus
	return os.WriteFile(filepath.Join(g.dir("cpuset"), "cpuset.cpus"), []byte(cpus), 0)
}

// dir is where the group's files of controller c are: its v1 directory on a hybrid host, else
// its own.
func (g *Group) dir(c string) string {
	if v1 := g.v1[c]; v1 != "" {
		return v1
	}
	return g.Path
}

// SetMaxProcs bounds the group's tasks (pids.max), when the pids controller is enabled.
func (g *Group) SetMaxProcs(n int) error {
	g.maxProcs = n
	return os.WriteFile(filepath.Join(g.dir("pids"), "pids.max"), []byte(strconv.Itoa(n)), 0)
}

// SetMemoryMax bounds the group's memory (memory.max, no swap beyond it) when the memory
// controller is enabled, and has the kernel kill the whole group when it runs out
// (memory.oom.group): an arm out of memory fails whole rather than limping. On v1, which kills
// one process at a time, perf-host kills the rest when it sees the first go.
func (g *Group) SetMemoryMax(bytes int64) error {
	g.maxMem = bytes
	if dir := g.v1["memory"]; dir != "" {
		return setMemoryMaxV1(dir, bytes)
	}
	var errs []error
	for file, v := range map[string]string{"memory.max": strconv.FormatInt(bytes, 10), "memory.swap.max": "0", "memory.oom.group": "1"} {
		if err := os.WriteFile(filepath.Join(g.Path, file), []byte(v), 0); err != nil && !(file == "memory.swap.max" && errors.Is(err, os.ErrNotExist)) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// OOMKills is how many processes of the group the kernel killed for memory (memory.events
// oom_kill; v1: memory.oom_control) since ForgetOOMKills, when the memory controller is enabled.
func (g *Group) OOMKills() (int64, bool) {
	n, ok := g.oomKillsHere()
	return g.oomCarried + n, ok
}

// ForgetOOMKills starts the count of OOM kills afresh, for an arm about to start: the empty
// group is made anew if the kernel killed in it (a directory's count lasts as long as it does).
func (g *Group) ForgetOOMKills() error {
	var err error
	if n, _ := g.oomKillsHere(); n > 0 && !g.populated() {
		err = g.renew()
	}
	g.oomCarried = 0
	return err
}

// oomKillsHere is OOMKills of the group's present directory.
func (g *Group) oomKillsHere() (int64, bool) {
	if dir := g.v1["memory"]; dir != "" {
		return oomKillsV1(dir)
	}
	if !g.Has("memory") {
		return 0, false
	}
	for _, line := range strings.Split(readString(filepath.Join(g.Path, "memory.events")), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

func readString(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// oPath is O_PATH, which package syscall does not name: a descriptor that only names the
// directory, all CLONE_INTO_CGROUP needs.
const oPath = 0x200000

// Hold keeps a systemd unit with Delegate=yes (perf-gate-cgroups.service) active, so that its
// cgroup stays delegated to perf-host: it moves itself into a leaf "holder" (a group whose
// children get controllers may hold no process itself) and waits until ctx ends.
func Hold(ctx context.Context) error {
	self := Self()
	if self == "" {
		return errors.New("cgroup-hold: no cgroup v2 hierarchy")
	}
	dir := self
	if filepath.Base(self) == "holder" {
		dir = filepath.Dir(self)
	} else {
		holder := filepath.Join(self, "holder")
		if err := os.Mkdir(holder, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("cgroup-hold: %w", err)
		}
		if err := os.WriteFile(filepath.Join(holder, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			return fmt.Errorf("cgroup-hold: entering %s: %w", holder, err)
		}
	}
	fmt.Printf("holding %s for perf-host (its --cgroup)\n", dir)
	<-ctx.Done()
	return nil
}
