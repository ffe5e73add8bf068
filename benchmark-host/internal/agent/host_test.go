package agent

import (
	"errors"
	"fmt"
	"testing"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/refused"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/run"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/store"
)

// Each part's error keeps its exit code however it is wrapped on its way to perf-host.
func TestExitCodeOfEachPartsError(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, contract.ExitOK},
		{fmt.Errorf("run pr-1: %w", store.ErrBusy), contract.ExitBusy},
		{fmt.Errorf("run pr-1: %w", run.ErrNotFinished), contract.ExitNotFinished},
		{fmt.Errorf("deploy: %w", refused.Errorf("plan: pairs: must be at least 1")), contract.ExitRefused},
		{errors.New("disk full"), contract.ExitFailed},
	} {
		if got := ExitCode(c.err); got != c.want {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
