package profile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/cgroup"
)

// Run is one run's sampling, as perf-host drives it: started before the load, finished after
// it. A host that cannot sample (no perf, no permission, an arm without a cgroup) runs the run
// all the same, and the result says why there are no profiles.
type Run struct {
	sampler *Sampler
	why     string // why there is no sampler
}

// StartRun starts sampling the arms; it never fails the run.
func StartRun(cfg Config) *Run {
	for _, a := range cfg.Arms {
		if a.Cgroup == "" {
			return &Run{why: fmt.Sprintf("the %s has no cgroup of its own to sample (this host's cgroup mode)", a.Name)}
		}
	}
	s, err := Start(cfg)
	if err != nil {
		return &Run{why: err.Error()}
	}
	return &Run{sampler: s}
}

// CgroupName is a cgroup's path as perf -G takes it: under the cgroup v2 mount; "" for none.
func CgroupName(path string) string {
	mount := cgroup.Mount()
	if path == "" || mount == "" || !strings.HasPrefix(path, mount+"/") {
		return ""
	}
	return strings.TrimPrefix(path, mount+"/")
}

// CPU is what the sampler has used so far (0 without one): the host counts it as neither
// arm's, nor as foreign load.
func (r *Run) CPU() time.Duration {
	if r.sampler == nil {
		return 0
	}
	return r.sampler.CPU()
}

// Finish stops the sampling and writes each arm's profile into dir (ARM.pb.gz) from its
// samples in the measured slices; the result's profiles section says what was recorded or why
// nothing was. The raw samples are removed.
func (r *Run) Finish(slices []contract.Slice, dir string) *contract.Profiles {
	if r.sampler == nil {
		return &contract.Profiles{Status: contract.ProfilesNotAvailable, Reason: r.why}
	}
	defer r.sampler.Remove()
	if err := r.sampler.Stop(); err != nil {
		return &contract.Profiles{Status: contract.ProfilesNotAvailable, Reason: err.Error()}
	}
	p, err := r.sampler.Build(WindowsOf(slices), dir)
	if err != nil {
		return &contract.Profiles{Status: contract.ProfilesNotAvailable, Reason: "building the profiles: " + err.Error()}
	}
	return p
}

// Read is an arm's profile of a finished run, from the run's directory: `perf-host profile`.
func Read(runDir, arm string) ([]byte, error) {
	if arm != contract.Champion && arm != contract.Challenger {
		return nil, fmt.Errorf("no arm %q: champion or challenger", arm)
	}
	b, err := os.ReadFile(filepath.Join(runDir, arm+".pb.gz"))
	if os.IsNotExist(err) {
		return nil, fmt.Errorf("run %s has no %s profile (its run request did not ask for profiles, or the host could not sample: its result says why)", filepath.Base(runDir), arm)
	}
	return b, err
}
