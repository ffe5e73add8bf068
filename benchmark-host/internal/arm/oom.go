package arm

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/privilege"
)

// OOM preferences: when memory runs out, the kernel kills the process with the highest
// oom_score_adj first (its share of memory breaks ties). The challenger's processes go first,
// then the champion's, and only then anything of the host at 0: perf-host, the load generator,
// the champion supervisor, sshd. A process cannot lower its own score without
// CAP_SYS_RESOURCE, which no arm has; its children inherit it.
const (
	OOMChallenger = 1000
	OOMChampion   = 500
)

// PreferForOOM raises every process of the arm to the arm's OOMScoreAdj (none when it is 0).
// Launch calls it for each process it starts, and the run at every slice boundary, so that a
// process forked before the first call is caught by the next: it converges, since what a raised
// process forks inherits the raised score.
func (a *Arm) PreferForOOM() error {
	if a.OOMScoreAdj == 0 {
		return nil
	}
	want := strconv.Itoa(a.OOMScoreAdj)
	var caps []privilege.Cap
	if !a.User.Self {
		caps = []privilege.Cap{privilege.DACOverride} // /proc/PID belongs to the arm's user
	}
	return privilege.Do(privilege.Thread{Caps: caps}, func() error {
		for _, p := range a.Procs() {
			path := fmt.Sprintf("/proc/%d/oom_score_adj", p.Pid)
			b, err := os.ReadFile(path)
			if err != nil || strings.TrimSpace(string(b)) == want {
				continue // gone, or done
			}
			// Gone meanwhile: ENOENT, or ESRCH for a process that is exiting.
			if err := os.WriteFile(path, []byte(want), 0); err != nil && !os.IsNotExist(err) && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("%s: oom_score_adj of pid %d: %w", a.Name, p.Pid, err)
			}
		}
		return nil
	})
}
