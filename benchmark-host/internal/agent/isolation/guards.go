package isolation

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/config"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/cgroup"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/netguard"
)

// What keeps one arm off the other through what they share besides the CPUs: the host's
// network (netguard), its disk (a filesystem of its own per arm, mounted by install.sh) and its
// memory (a memory limit per arm, and the OOM killer's order); private.go adds the directories
// and IPC every user shares. See docs/design/0001-network-between-arms.md,
// docs/design/0002-arm-disk-and-memory.md and docs/design/0029-cgroup-v1-on-hybrid-hosts.md.

// setUpGuards fills the isolation's network, disk and memory lines and sets the arms' limits;
// the error is a limit that could not be set.
func setUpGuards(cfg config.Config, iso *Isolation, setup *cgroup.Setup) error {
	var err error
	info := &iso.Info
	iso.Champion.OOMScoreAdj, iso.Challenger.OOMScoreAdj = arm.OOMChampion, arm.OOMChallenger
	guard := netguard.Guard{Table: cfg.NetTable}
	fallback := "the host still drops the pairs of slices where an arm served anyone but the load generator"
	switch {
	case !iso.Champion.Dedicated || !iso.Challenger.Dedicated:
		info.Network = "none: the arms do not run as users of their own, which the packet filter tells them apart by; " + fallback
	default:
		if err := guard.Check(); err != nil {
			info.Network = "none: " + err.Error() + "; " + fallback
			info.Notes = append(info.Notes, "the arms can reach each other's ports and the host's services: "+err.Error())
			break
		}
		iso.net = &guard
		info.Network = fmt.Sprintf("nftables table inet %s: each arm's user reaches on this host only its own ports and answers whoever reaches it; %s", guard.Table, fallback)
	}

	var disks []string
	for _, a := range []*arm.Arm{iso.Champion, iso.Challenger} {
		if total, _, err := armSpace(a.Home); err != nil {
			disks = append(disks, fmt.Sprintf("%s: %v", a.Name, err))
		} else {
			disks = append(disks, fmt.Sprintf("%s: a filesystem of its own, %s", a.Name, SizeString(total)))
		}
	}
	info.Disk = strings.Join(disks, "; ")

	order := fmt.Sprintf("oom_score_adj %d for the challenger's processes, %d for the champion's, so the OOM killer takes them before the host's", arm.OOMChallenger, arm.OOMChampion)
	switch {
	case cfg.ArmMemoryBytes <= 0:
		info.Memory = "no limit (--arm-memory-bytes 0); " + order
	case setup.Has("memory"): // v2's memory.max, or the v1 subtree's limit on a hybrid host
		for _, a := range []*arm.Arm{iso.Champion, iso.Challenger} {
			err = errors.Join(err, a.Group.SetMemoryMax(cfg.ArmMemoryBytes))
		}
		info.Memory = fmt.Sprintf("memory.max %s per arm (its dependencies and its /dev/shm included), the whole arm killed when it runs out; %s", SizeString(uint64(cfg.ArmMemoryBytes)), order)
		if v1 := setup.V1("memory"); v1 != "" {
			info.Memory = fmt.Sprintf("memory.limit_in_bytes %s per arm (cgroup v1 %s; its dependencies and its /dev/shm included), the rest of the arm killed when the kernel kills one of its processes for it; %s", SizeString(uint64(cfg.ArmMemoryBytes)), v1, order)
		}
	default:
		info.Memory = "not limited: no cgroup memory controller for perf-host's groups (a hybrid host installed without --cgroup-v1? re-run install.sh); " + order
		info.Notes = append(info.Notes, "an arm's memory is not limited on this host (no cgroup memory controller for perf-host's groups); the OOM killer takes the arms first")
	}
	return err
}

// AllowNet gives an arm, about to start, its ports on the host: the others are refused.
func (iso *Isolation) AllowNet(a *arm.Arm, ports map[string]int) error {
	if iso.net == nil {
		return nil
	}
	var list []int
	for _, p := range ports {
		list = append(list, p)
	}
	if err := iso.net.Allow(a.User.UID, list); err != nil {
		return fmt.Errorf("%s: keeping it to its own ports: %w", a.Name, err)
	}
	return nil
}

// RefusedNote says how often an arm tried to reach the host outside its ports, for the run's log.
func (iso *Isolation) RefusedNote(a *arm.Arm) string {
	if iso.net == nil {
		return ""
	}
	n, err := iso.net.Refused(a.User.UID)
	switch {
	case err != nil:
		return fmt.Sprintf("%s: its refused packets could not be read: %v", a.Name, err)
	case n > 0:
		return fmt.Sprintf("%s: %d packets to the host outside its own ports were refused", a.Name, n)
	}
	return ""
}

// armSpace is the size and free space of an arm's own filesystem; an error when its home is
// not one (it would share the host's disk, where runs and results are written).
func armSpace(home string) (total, free uint64, err error) {
	var self, parent syscall.Stat_t
	if err := syscall.Stat(home, &self); err != nil {
		return 0, 0, err
	}
	if err := syscall.Stat(filepath.Dir(home), &parent); err != nil {
		return 0, 0, err
	}
	if self.Dev == parent.Dev {
		return 0, 0, fmt.Errorf("%s is not a filesystem of its own: the arm shares the host's disk (install.sh mounts one per arm)", home)
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(home, &fs); err != nil {
		return 0, 0, err
	}
	return fs.Blocks * uint64(fs.Bsize), fs.Bavail * uint64(fs.Bsize), nil
}

// ArmDiskFindings are the pre-flight checks of the arms' disks: each a filesystem of its own of
// --arm-disk-bytes. Without one, an arm that fills its disk fills the host's: a host with a
// user per arm (installed) refuses the run; local mode, which isolates nothing, runs.
func (iso *Isolation) ArmDiskFindings(cfg config.Config) []contract.Finding {
	var out []contract.Finding
	for _, a := range []*arm.Arm{iso.Champion, iso.Challenger} {
		f := contract.Finding{Check: "arm_disk", Status: contract.FindingOK}
		total, free, err := armSpace(a.Home)
		switch {
		case err != nil && a.Dedicated:
			f.Status, f.Detail = contract.FindingRefuse, fmt.Sprintf("%s: %v; re-run install.sh", a.Name, err)
		case err != nil:
			// Local mode (no user per arm): nothing of the arms is isolated, as status says.
			f.Detail = fmt.Sprintf("%s: %v (local mode)", a.Name, err)
		case total > cfg.ArmDiskBytes+cfg.ArmDiskBytes/10:
			f.Status, f.Detail = contract.FindingFlag, fmt.Sprintf("%s: its filesystem holds %s, more than --arm-disk-bytes %s (re-run install.sh)", a.Name, SizeString(total), SizeString(cfg.ArmDiskBytes))
		default:
			f.Detail = fmt.Sprintf("%s: %s of its own, %s free", a.Name, SizeString(total), SizeString(free))
		}
		out = append(out, f)
	}
	return out
}

// MemoryFinding is the pre-flight check that names what holds each arm's memory limit (the
// isolation's memory line), or that nothing does. Never a flag: a host without a memory
// controller still measures; status notes the weakness.
func (iso *Isolation) MemoryFinding() contract.Finding {
	return contract.Finding{Check: "arm_memory", Status: contract.FindingOK, Detail: iso.Info.Memory}
}

// OutOfDisk says whether an arm has (all but) filled its own filesystem of limit bytes, and in
// what words.
func OutOfDisk(a *arm.Arm, limit uint64) (string, bool) {
	total, free, err := armSpace(a.Home)
	if err != nil || free > max(total/200, 1<<20) {
		return "", false
	}
	return fmt.Sprintf("%s: out of its %s of disk (%s free)", a.Name, SizeString(limit), SizeString(free)), true
}

// ForeignConns lists, per arm, the connections it holds that neither perf-host (the load
// generator, the health checks) nor the arm itself opened. Only arms of users of their own can
// be told apart.
func ForeignConns(arms map[string]*arm.Arm) map[string][]netguard.Conn {
	out := map[string][]netguard.Conn{}
	socks, err := netguard.ReadSockets()
	if err != nil {
		return out
	}
	self := uint32(os.Getuid())
	for name, a := range arms {
		if a.Dedicated {
			out[name] = netguard.Foreign(socks, a.User.UID, self)
		}
	}
	return out
}

// DescribeForeign counts distinct connections by who opened them: "user x (uid 998): 12".
func DescribeForeign(conns []netguard.Conn) (int64, []string) {
	seen := map[[2]string]bool{}
	by := map[string]int{}
	for _, c := range conns {
		k := [2]string{c.Local.String(), c.Remote.String()}
		if !seen[k] {
			seen[k] = true
			by[c.Peer]++
		}
	}
	var peers []string
	for _, p := range slices.Sorted(maps.Keys(by)) {
		peers = append(peers, fmt.Sprintf("%s: %d", p, by[p]))
	}
	return int64(len(seen)), peers
}

// SizeString is "2 GiB", "1.9 GiB" or "128 MiB".
func SizeString(b uint64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", b>>30)
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}

// OOMKills is how many processes the kernel has killed for memory since boot (/proc/vmstat).
func OOMKills() int64 {
	b, _ := os.ReadFile("/proc/vmstat")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// OutOfMemory words an arm whose memory that cannot be reclaimed has reached its limit: it is
// out of memory whether or not the kernel has killed yet (see cgroup.Group.OutOfMemory).
func OutOfMemory(a *arm.Arm) (string, bool) {
	if a.Group == nil {
		return "", false
	}
	pinned, out := a.Group.OutOfMemory()
	if !out {
		return "", false
	}
	return fmt.Sprintf("%s: killed for memory: over its memory limit (its processes hold %s that cannot be reclaimed, all of it; perf-host stopped the arm)", a.Name, SizeString(pinned)), true
}

// KilledForMemory words an arm's processes killed for memory: by its cgroup's memory limit
// (memory.events or v1's memory.oom_control, exact), or by the OOM killer of the whole host when
// byHost (the kernel's count of kills rose while the arm lost processes: the arms'
// oom_score_adj makes them its first picks).
func KilledForMemory(a *arm.Arm, byHost bool) (string, bool) {
	if g := a.Group; g != nil {
		if n, ok := g.OOMKills(); ok && n > 0 {
			return fmt.Sprintf("%s: killed for memory: over its memory limit (the kernel killed %d of its processes)", a.Name, n), true
		}
	}
	if byHost {
		return fmt.Sprintf("%s: killed for memory: the host ran out, and the kernel's OOM killer, which takes the arms' processes before the host's, killed some of its processes", a.Name), true
	}
	return "", false
}
