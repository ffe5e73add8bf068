package agent

import (
	"fmt"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/image"
)

// imageNote says how an arm runs its container image: always as the arm's own user, whatever
// user the image asks for.
func imageNote(arm string, img *image.Config, user string) string {
	asks := fmt.Sprintf("user %q", img.User)
	if img.AsksForRoot() {
		asks = "root"
	}
	return fmt.Sprintf("%s: container image %s (%d layers), run by runc; the image asks for %s and runs as the arm's user %s (uid 0 of its own user namespace, without capabilities)", arm, img.Digest, img.Layers, asks, user)
}
