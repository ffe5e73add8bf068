package run

import (
	"context"
	"fmt"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/config"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/hostinfo"
)

// settleWindow is how long one look at the host's CPUs lasts before a run.
const settleWindow = time.Second

// settle waits, up to --settle-seconds, until the host's CPUs are as quiet as a slice must
// be. The host's own work just before a run (the previous run's arms stopping, a deploy, the
// champion supervisor starting the champion again) settles within seconds, and a run that
// started on it would flag itself; a neighbour that does not settle flags the run, and the
// slices it disturbs are dropped whatever this says.
func settle(ctx context.Context, cfg config.Config, logf func(string, ...any)) contract.Finding {
	started := time.Now()
	for said := false; ; said = true {
		cores, ok := foreignCores(ctx, settleWindow)
		waited := time.Since(started).Seconds()
		switch {
		case !ok:
			return contract.Finding{Check: "quiet", Status: contract.FindingFlag, Detail: "the host's CPU time (/proc/stat) is unreadable: foreign load cannot be seen"}
		case cores <= cfg.MaxForeignCores:
			return contract.Finding{Check: "quiet", Status: contract.FindingOK, Detail: fmt.Sprintf("%.2f CPU cores busy with other work (limit --max-foreign-cores %.2f) after %.0f s", cores, cfg.MaxForeignCores, waited)}
		case waited >= cfg.SettleSeconds || ctx.Err() != nil:
			return contract.Finding{Check: "quiet", Status: contract.FindingFlag, Detail: fmt.Sprintf("%.2f CPU cores busy with other work after waiting %.0f s (limit --max-foreign-cores %.2f): another job is running on the host", cores, waited, cfg.MaxForeignCores)}
		case !said:
			logf("waiting up to %g s for the host to settle: %.2f CPU cores busy with other work (limit --max-foreign-cores %.2f)", cfg.SettleSeconds, cores, cfg.MaxForeignCores)
		}
	}
}

// foreignCores is the CPU cores the host spent over window on anything but this process.
func foreignCores(ctx context.Context, window time.Duration) (float64, bool) {
	a, aSelf := hostinfo.ReadCPUTime(), hostinfo.SelfCPUUs()
	select {
	case <-ctx.Done():
	case <-time.After(window):
	}
	b, bSelf := hostinfo.ReadCPUTime(), hostinfo.SelfCPUUs()
	dt := float64(b.At.Sub(a.At).Microseconds())
	if !a.OK || !b.OK || dt <= 0 {
		return 0, false
	}
	used := b.UsedSince(a) - float64(bSelf-aSelf)
	return max(0, used/dt), true
}
