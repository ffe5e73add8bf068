package cgroup

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
)

// A hybrid host (cgroup v1 controllers beside a v2 mount that has none of them) limits the
// arms' memory, CPUs and tasks with the v1 controllers: install.sh makes a subtree in each v1 hierarchy
// and gives it to the CI user (--cgroup-v1), perf-host makes each group in it beside the v2 one,
// and a process the arm starts is born in them: the thread that starts it joins them first
// (v1 has no CLONE_INTO_CGROUP; a child is born in its parent thread's v1 groups). See
// docs/design/0002-arm-disk-and-memory.md.

// V1Controllers are the v1 controllers perf-host uses where the v2 subtree lacks them, and the
// file each has in a group.
var V1Controllers = []string{"memory", "cpuset", "pids"}

var v1File = map[string]string{"memory": "memory.limit_in_bytes", "cpuset": "cpuset.cpus", "pids": "pids.max"}

const cgroupV1Magic = 0x27e0eb

// OpenV1 takes the v1 subtrees dirs for the controllers the v2 subtree lacks, and says in the
// setup's note what each holds. A subtree it cannot use is left out, the note says why; the
// groups then fall back as without it.
func (s *Setup) OpenV1(dirs []string) {
	if s.Mode == ModeNone || len(dirs) == 0 {
		return
	}
	var took, refused []string
	for _, dir := range dirs {
		controller, err := v1Controller(dir)
		switch {
		case err != nil:
			refused = append(refused, err.Error())
		case slices.Contains(s.Controllers, controller):
			refused = append(refused, fmt.Sprintf("%s: cgroup v2 has %s already", dir, controller))
		default:
			if s.v1 == nil {
				s.v1 = map[string]string{}
			}
			s.v1[controller] = dir
			took = append(took, controller+" "+dir)
		}
	}
	if len(took) > 0 {
		s.Note += "; cgroup v1 for " + strings.Join(took, ", ")
	}
	if len(refused) > 0 {
		s.Note += "; not used: " + strings.Join(refused, "; ")
	}
}

// v1Controller is the controller of the v1 hierarchy dir lies in, when perf-host may make
// groups in dir and move threads into them.
func v1Controller(dir string) (string, error) {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return "", fmt.Errorf("cgroup v1 %s: %v (re-run install.sh)", dir, err)
	}
	if fs.Type != cgroupV1Magic {
		return "", fmt.Errorf("%s is not on a cgroup v1 file system", dir)
	}
	for _, c := range V1Controllers {
		if _, err := os.Stat(filepath.Join(dir, v1File[c])); err == nil {
			if err := syscall.Access(filepath.Join(dir, "tasks"), 2 /* W_OK */); err != nil {
				return "", fmt.Errorf("cgroup v1 %s is not writable by this user (%v; install.sh gives it to the CI user)", dir, err)
			}
			return c, nil
		}
	}
	return "", fmt.Errorf("%s is in none of the v1 hierarchies perf-host uses (%s)", dir, strings.Join(V1Controllers, ", "))
}

// V1 is the v1 subtree perf-host uses for a controller, "" for none.
func (s *Setup) V1(controller string) string { return s.v1[controller] }

// makeV1 makes the group's directory in each v1 subtree. A cpuset group starts with its
// parent's CPUs and memory nodes: v1 refuses tasks into a cpuset that has none.
func (g *Group) makeV1(name string) error {
	var errs []error
	for _, c := range slices.Sorted(maps.Keys(g.setup.v1)) {
		dir := filepath.Join(g.setup.v1[c], name)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			errs = append(errs, fmt.Errorf("cgroup %s: %w", dir, err))
			continue
		}
		if c == "cpuset" {
			for _, f := range []string{"cpuset.mems", "cpuset.cpus"} {
				if strings.TrimSpace(readString(filepath.Join(dir, f))) == "" {
					errs = append(errs, os.WriteFile(filepath.Join(dir, f), []byte(readString(filepath.Join(g.setup.v1[c], f))), 0))
				}
			}
		}
		if g.v1 == nil {
			g.v1 = map[string]string{}
		}
		g.v1[c] = dir
	}
	return errors.Join(errs...)
}

// V1Dirs are the group's v1 directories, which a process must be born in (see privilege).
func (g *Group) V1Dirs() []string {
	var out []string
	for _, c := range slices.Sorted(maps.Keys(g.v1)) {
		out = append(out, g.v1[c])
	}
	return out
}

// setMemoryMaxV1 is SetMemoryMax on v1: memory.limit_in_bytes, and memory.memsw.limit_in_bytes
// (memory and swap) at the same value where swap is accounted. The kernel refuses a memory limit
// above the memsw one at every step, so memsw is lifted first.
func setMemoryMaxV1(dir string, bytes int64) error {
	memsw := filepath.Join(dir, "memory.memsw.limit_in_bytes")
	_, err := os.Stat(memsw)
	hasSwap := err == nil
	steps := [][2]string{{"memory.limit_in_bytes", strconv.FormatInt(bytes, 10)}}
	if hasSwap {
		steps = [][2]string{{"memory.memsw.limit_in_bytes", "-1"}, steps[0], {"memory.memsw.limit_in_bytes", strconv.FormatInt(bytes, 10)}}
	}
	for _, s := range steps {
		if err := os.WriteFile(filepath.Join(dir, s[0]), []byte(s[1]), 0); err != nil {
			return fmt.Errorf("%s/%s: %w", dir, s[0], err)
		}
	}
	return nil
}

// oomKillsV1 reads memory.oom_control's oom_kill: the processes the kernel killed for the
// group's limit.
func oomKillsV1(dir string) (int64, bool) {
	for _, line := range strings.Split(readString(filepath.Join(dir, "memory.oom_control")), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// PinnedBytes is the group's memory the kernel cannot reclaim without swap: all it holds but
// file pages (memory.current less memory.stat's active_file and inactive_file; v1:
// memory.usage_in_bytes less total_active_file and total_inactive_file), so anonymous and shared
// memory and the kernel's own for the group (page tables, stacks), when the memory controller is
// enabled.
func (g *Group) PinnedBytes() (uint64, bool) {
	used, ok := g.MemoryBytes()
	if !ok {
		return 0, false
	}
	keys := []string{"active_file", "inactive_file"}
	if g.v1["memory"] != "" {
		keys = []string{"total_active_file", "total_inactive_file"}
	}
	dir := g.dir("memory")
	var files uint64
	found := 0
	for _, line := range strings.Split(readString(filepath.Join(dir, "memory.stat")), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && slices.Contains(keys, k) {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, false
			}
			files += n
			found++
		}
	}
	return used - min(files, used), found == len(keys)
}

// OutOfMemory says whether the group's memory that cannot be reclaimed has reached its limit
// (SetMemoryMax), within a margin of 1/32 of it (at least 8 MiB): then the kernel reclaims
// nothing but the processes' own program text, which they need back at once. On cgroup v1 such a
// group can thrash for minutes before the kernel's OOM killer acts, and everything that reads its
// processes (/proc) waits on it (measured: 150 processes of 7 MiB against a limit of 300 MiB
// stretched a run's ten seconds of load to three and a half minutes).
func (g *Group) OutOfMemory() (pinned uint64, out bool) {
	if g.maxMem <= 0 {
		return 0, false
	}
	pinned, ok := g.PinnedBytes()
	limit := uint64(g.maxMem)
	return pinned, ok && pinned+max(limit/32, 8<<20) >= limit
}
