package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/release"
)

// Deploy unpacks a build's tar.gz from r into releases/<sha>, safely (see package release).
// The champion's release, and those a rollback may restore, are never replaced under them.
func (h *Host) Deploy(role, sha string, r io.Reader) (string, error) {
	st, err := h.LoadState()
	if err != nil {
		return "", err
	}
	dir := h.releaseDir(sha)
	if _, err := os.Stat(dir); err == nil && st.protected(sha) {
		io.Copy(io.Discard, io.LimitReader(r, h.DeployLimits.MaxCompressed))
		return fmt.Sprintf("release %s is in use as champion or previous champion; kept as it is", sha), nil
	}
	incoming := h.path("releases", fmt.Sprintf(".incoming-%s-%d", sha, os.Getpid()))
	// The digest of what was received names the build in a run's identity: one commit built
	// twice may differ.
	digest := sha256.New()
	if err := release.Unpack(io.TeeReader(r, digest), incoming, h.DeployLimits); err != nil {
		return "", &RefusedError{Err: fmt.Errorf("deploy %s %s: %w", role, sha, err)}
	}
	if _, err := os.Stat(dir); err == nil {
		old := h.path("releases", fmt.Sprintf(".replaced-%s-%d", sha, os.Getpid()))
		if err := os.Rename(dir, old); err != nil {
			os.RemoveAll(incoming)
			return "", err
		}
		defer os.RemoveAll(old)
	}
	if err := os.Rename(incoming, dir); err != nil {
		os.RemoveAll(incoming)
		return "", err
	}
	writeJSONAtomic(dir+".json", struct {
		releaseMeta
		Deployed time.Time `json:"deployed"`
	}{releaseMeta{SHA: sha, Role: role, Digest: "sha256:" + hex.EncodeToString(digest.Sum(nil))}, time.Now().UTC()})
	return fmt.Sprintf("deployed %s %s", role, sha), nil
}
