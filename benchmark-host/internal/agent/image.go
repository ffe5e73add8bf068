package agent

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/image"
)

// commandNeeded refuses a run request without service.command when an arm's build is not a
// container image (whose entrypoint and cmd would run): before the run, naming the field,
// rather than as an arm that cannot start.
func (h *Host) commandNeeded(spec contract.ServiceSpec, b *contract.Builds) error {
	if len(spec.Command) > 0 {
		return nil
	}
	for _, sha := range []string{b.ChampionSHA, b.ChallengerSHA} {
		if _, err := os.Stat(filepath.Join(h.releaseDir(sha), image.ConfigFile)); err != nil {
			return refuse("plan: service.command: required for a build that is not a container image (%s), an argv list such as [\"./bin/server\"]", sha)
		}
	}
	return nil
}

// imageNote says how an arm runs its container image: always as the arm's own user, whatever
// user the image asks for.
func imageNote(arm string, img *image.Config, user string) string {
	asks := fmt.Sprintf("user %q", img.User)
	if img.AsksForRoot() {
		asks = "root"
	}
	return fmt.Sprintf("%s: container image %s (%d layers), run by runc; the image asks for %s and runs as the arm's user %s (uid 0 of its own user namespace, without capabilities)", arm, img.Digest, img.Layers, asks, user)
}
