package run

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/config"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/refused"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/store"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/image"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/placement"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/plan"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

// requestCheck validates a run request against the host: its configuration, its champion and
// the releases deployed on it.
type requestCheck struct {
	cfg   config.Config
	store *store.Store
}

// read decodes the request strictly, sets what only the host may set (the targets,
// the run's id, the builds and, for an A/A run, the champion's service spec) on the typed
// value, and validates the whole once.
func (c requestCheck) read(runID, kind string, stdin io.Reader) (*contract.RunRequest, error) {
	raw, err := io.ReadAll(io.LimitReader(stdin, maxRequestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the plan: %w", err)
	}
	if len(raw) > maxRequestBytes {
		return nil, refused.Errorf("plan: larger than %d bytes", maxRequestBytes)
	}
	var req contract.RunRequest
	if err := contract.Decode(bytes.NewReader(raw), &req); err != nil {
		return nil, refused.Errorf("plan: %v", err)
	}
	if err := service.Validate(&req.Service); err != nil {
		return nil, refused.Errorf("plan: %w", err)
	}
	st, err := c.store.LoadState()
	if err != nil {
		return nil, err
	}
	builds, err := c.buildsOf(kind, &req, st)
	if err != nil {
		return nil, err
	}
	if err := c.commandNeeded(req.Service, builds); err != nil {
		return nil, err
	}
	lg := &req.Loadgen
	if err := hostOwnedFields(lg); err != nil {
		return nil, err
	}
	lg.Targets = &contract.Targets{
		Champion:   fmt.Sprintf("http://127.0.0.1:%d", c.cfg.ChampionPort),
		Challenger: fmt.Sprintf("http://127.0.0.1:%d", c.cfg.ChallengerPort),
	}
	lg.RunID, lg.Builds = runID, builds
	compiled, err := plan.Compile(*lg, c.store.RunDir(runID), generatorCPUs(c.cfg))
	if err != nil {
		var fe *plan.FieldError
		if errors.As(err, &fe) {
			return nil, refused.Errorf("plan: loadgen.%s: %s", fe.Field, fe.Msg)
		}
		return nil, refused.Errorf("plan: loadgen: %v", err)
	}
	req.Loadgen = compiled.Plan // with its defaults filled
	if err := c.checkRunLength(&req); err != nil {
		return nil, err
	}
	return &req, nil
}

// buildsOf names the builds a run measures, refusing a request that names the wrong ones.
func (c requestCheck) buildsOf(kind string, req *contract.RunRequest, st store.State) (*contract.Builds, error) {
	if st.Champion == "" {
		return nil, errors.New("no champion on this host: deploy champion SHA and promote SHA first")
	}
	if req.ChampionSHA != "" && req.ChampionSHA != st.Champion {
		return nil, refused.Errorf("plan: champion_sha %s, but the host's champion is %s", req.ChampionSHA, st.Champion)
	}
	b := &contract.Builds{Kind: kind, ChampionSHA: st.Champion, ChallengerSHA: req.ChallengerSHA, Base: contract.BaseChampion}
	switch kind {
	case contract.KindAB:
		if err := c.deployed("challenger_sha", req.ChallengerSHA, "challenger"); err != nil {
			return nil, err
		}
		if req.MergeBaseSHA != "" {
			if req.ChampionSHA != "" {
				return nil, refused.Errorf("plan: merge_base_sha: the champion arm runs the merge base, so champion_sha cannot be asked for too")
			}
			if err := c.deployed("merge_base_sha", req.MergeBaseSHA, "champion"); err != nil {
				return nil, err
			}
			b.ChampionSHA, b.Base = req.MergeBaseSHA, contract.BaseMergeBase
		}
		if req.AncestorSHA != "" {
			if req.MergeBaseSHA != "" {
				return nil, refused.Errorf("plan: ancestor_sha: a drift run's champion arm runs the ancestor, so merge_base_sha cannot be asked for too")
			}
			if err := cmp.Or(ancestorOf(req, st), c.deployed("ancestor_sha", req.AncestorSHA, "champion")); err != nil {
				return nil, err
			}
			b.ChampionSHA, b.Base = req.AncestorSHA, contract.BaseAncestor
		}
	case contract.KindAA:
		if req.ChallengerSHA != "" {
			return nil, refused.Errorf("plan: challenger_sha: an A/A run uses the champion on both ports; leave it out")
		}
		if req.MergeBaseSHA != "" {
			return nil, refused.Errorf("plan: merge_base_sha: an A/A run measures the champion against itself; leave it out")
		}
		if req.AncestorSHA != "" {
			return nil, refused.Errorf("plan: ancestor_sha: an A/A run measures the champion against itself; leave it out")
		}
		b.ChallengerSHA = st.Champion
	}
	return b, nil
}

// ancestorOf refuses a drift run that is not the champion against an ancestor the host keeps
// (docs/design/0023-history.md): a drift run measures main, so neither arm runs a pull
// request's build, and the ancestor's release is one gc never prunes.
func ancestorOf(req *contract.RunRequest, st store.State) error {
	switch {
	case req.ChallengerSHA != st.Champion:
		return refused.Errorf("plan: ancestor_sha: a drift run measures the champion %s against an ancestor; challenger_sha must name it, not %s", st.Champion, req.ChallengerSHA)
	case req.AncestorSHA == st.Champion || !st.Ancestor(req.AncestorSHA):
		return refused.Errorf("plan: ancestor_sha: %s is not an earlier champion this host keeps (perf-host history lists its ancestors)", req.AncestorSHA)
	}
	return nil
}

// deployed refuses a run request whose field names no deployed release (role: how to deploy it).
func (c requestCheck) deployed(field, sha, role string) error {
	if sha == "" {
		return refused.Errorf("plan: %s: required for run", field)
	}
	if err := contract.SHA.Check(sha); err != nil {
		return refused.Errorf("plan: %s: %v", field, err)
	}
	if _, err := os.Stat(c.store.ReleaseDir(sha)); err != nil {
		return refused.Errorf("plan: %s: release %q is not deployed (deploy %s SHA first)", field, sha, role)
	}
	return nil
}

// generatorCPUs bounds the plan's generator_cpus by the host's --loadgen-cpus placement:
// more event loops than CPUs would share them and fall behind the schedule.
func generatorCPUs(cfg config.Config) plan.CompileOption {
	cpus, err := placement.Parse(cfg.LoadgenCPUs)
	if err != nil {
		return plan.WithGeneratorCPUs(0) // the isolation check names the bad flag
	}
	return plan.WithGeneratorCPUs(len(cpus))
}

// hostOwnedFields refuses what a client may not decide: where the load goes, what it is
// called, and files read on the host (a body_file could send the host's own files to the
// challenger, which is code from a pull request).
func hostOwnedFields(lg *contract.Plan) error {
	switch {
	case lg.Targets != nil:
		return refused.Errorf("plan: loadgen.targets: set by the host, leave it out")
	case lg.Builds != nil:
		return refused.Errorf("plan: loadgen.builds: set by the host, leave it out")
	}
	if set := lg.ProtoDescriptorSet; set != "" && (filepath.IsAbs(set) || !filepath.IsLocal(set)) {
		return refused.Errorf("plan: loadgen.proto_descriptor_set: must be a relative path inside the build (each arm's release), got %q", set)
	}
	for field, paths := range map[string][]string{"proto_files": lg.ProtoFiles, "proto_import_paths": lg.ProtoImportPaths} {
		for i, p := range paths {
			if err := plan.CheckBuildPath(p); err != nil {
				return refused.Errorf("plan: loadgen.%s[%d]: %v", field, i, err)
			}
		}
	}
	for i, r := range lg.Requests {
		if r.BodyFile != "" {
			return refused.Errorf("plan: loadgen.requests[%d].body_file: not accepted by a host, which would read its own files; send the body", i)
		}
	}
	return nil
}

// commandNeeded refuses a run request without service.command when an arm's build is not a
// container image (whose entrypoint and cmd would run): before the run, naming the field,
// rather than as an arm that cannot start.
func (c requestCheck) commandNeeded(spec contract.ServiceSpec, b *contract.Builds) error {
	if len(spec.Command) > 0 {
		return nil
	}
	for _, sha := range []string{b.ChampionSHA, b.ChallengerSHA} {
		if _, err := os.Stat(filepath.Join(c.store.ReleaseDir(sha), image.ConfigFile)); err != nil {
			return refused.Errorf("plan: service.command: required for a build that is not a container image (%s), an argv list such as [\"./bin/server\"]", sha)
		}
	}
	return nil
}

// checkRunLength refuses a request that would hold the host longer than --max-run-seconds: the
// warm-up, every slice, and the start of the arms (their dependencies, setups and health checks, which run
// side by side, both arms with the request's spec). The request's loadgen plan has its
// defaults filled.
func (c requestCheck) checkRunLength(req *contract.RunRequest) error {
	lp := req.Loadgen
	slices := float64(2*lp.Pairs) * lp.SliceSeconds
	start := startSeconds(req.Service)
	total := lp.WarmupSeconds + slices + start
	if total > c.cfg.MaxRunSeconds {
		return refused.Errorf("plan: loadgen.pairs: %d pairs of %g s slices (%g s) + %g s warm-up + %g s to start the arms (dependencies, setup and health check) would hold the host for %g s, over this host's --max-run-seconds %g; use fewer pairs or shorter slices",
			lp.Pairs, lp.SliceSeconds, slices, lp.WarmupSeconds, start, total, c.cfg.MaxRunSeconds)
	}
	return nil
}

// startSeconds is the longest an arm may take to start: each dependency's ready wait, its
// setup, then its health check.
func startSeconds(s contract.ServiceSpec) float64 {
	setup := 0.0
	if len(s.Setup) > 0 {
		setup = s.SetupTimeoutSeconds
	}
	return float64(len(s.Dependencies))*s.ReadyTimeoutSeconds + setup + s.HealthTimeoutSeconds
}
