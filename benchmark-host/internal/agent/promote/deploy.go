package promote

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/refused"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/store"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/image"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/release"
)

// Deploy unpacks a build's tar.gz, or a container image, from r into releases/<sha>, safely
// (see packages release and image).
// The champion's release, and those a rollback may restore, are never replaced under them.
func (c *Champions) Deploy(role, sha string, r io.Reader) (string, error) {
	st, err := c.store.LoadState()
	if err != nil {
		return "", err
	}
	dir := c.store.ReleaseDir(sha)
	if _, err := os.Stat(dir); err == nil && st.Protected(sha) {
		io.Copy(io.Discard, io.LimitReader(r, c.cfg.DeployLimits.MaxCompressed))
		return fmt.Sprintf("release %s is in use as champion or previous champion; kept as it is", sha), nil
	}
	incoming := c.store.Path("releases", fmt.Sprintf(".incoming-%s-%d", sha, os.Getpid()))
	// The digest of what was received names the build in a run's identity: one commit built
	// twice may differ.
	digest := sha256.New()
	what, err := unpackBuild(io.TeeReader(r, digest), incoming, c.cfg.DeployLimits)
	if err != nil {
		return "", refused.Errorf("deploy %s %s: %w", role, sha, err)
	}
	if _, err := os.Stat(dir); err == nil {
		old := c.store.Path("releases", fmt.Sprintf(".replaced-%s-%d", sha, os.Getpid()))
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
	c.store.WriteReleaseMeta(store.ReleaseMeta{SHA: sha, Role: role, Digest: "sha256:" + hex.EncodeToString(digest.Sum(nil))})
	return fmt.Sprintf("deployed %s %s%s", role, sha, what), nil
}

// unpackBuild unpacks a build's tar.gz, or a container image recognised by its content (see
// package image); what describes an image for the deploy's answer.
func unpackBuild(r io.Reader, dir string, lim release.Limits) (what string, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	prefix, _ := br.Peek(64 << 10)
	if !image.Sniff(prefix) {
		if len(prefix) >= 2 && (prefix[0] != 0x1f || prefix[1] != 0x8b) {
			return "", errors.New("neither a build's .tar.gz nor a container image (docker save, podman save, an OCI archive or layout)")
		}
		return "", release.Unpack(br, dir, lim)
	}
	if err := image.Unpack(br, dir, lim); err != nil {
		return "", fmt.Errorf("container image: %w", err)
	}
	cfg, err := image.Load(dir)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(" (container image %s, %d layers, runs %q)", cfg.Digest, cfg.Layers, cfg.Argv()), nil
}
