package arm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/image"
)

// Where, in the arm's home, runc finds the container's configuration and keeps its state.
const (
	bundleDir = "bundle"
	runcState = ".runc"
)

// Image is the container image the arm's installed build is; nil for a tarball build.
func (a *Arm) Image() *image.Config { return a.image }

// container is the command that runs argv (empty: the image's entrypoint and cmd) with env in
// the arm's unpacked image: runc, started as the arm's user in its cgroup on its CPUs (by
// Launch), runs it rootless with the arm's user as the container's uid 0 (see image.Spec). The
// configuration is written by the arm's own user into its home, which only it may write.
func (a *Arm) container(argv, env []string) (*exec.Cmd, error) {
	runc, err := image.Runc()
	if err != nil {
		return nil, err
	}
	spec, err := a.image.Spec(image.Run{RootFS: filepath.Join(a.WorkDir(), image.RootFS), Argv: argv, Env: env,
		StateDir: a.StateDir(), UID: a.User.UID, GID: a.User.GID})
	if err != nil {
		return nil, err
	}
	// A container that was killed leaves runc's state behind; none runs now (the arm was cleared).
	write := exec.Command("/bin/sh", "-c", `rm -rf -- "$1" "$2" && mkdir -m 0700 -- "$1" "$2" && cat > "$1/config.json"`, "sh", bundleDir, runcState)
	write.Dir = a.Home
	write.Env = []string{"PATH=/usr/bin:/bin"}
	write.Stdin = bytes.NewReader(spec)
	var out limitedBuffer
	write.Stdout, write.Stderr = &out, &out
	if err := a.runBounded(a.Launch, write, 10*time.Second); err != nil {
		return nil, fmt.Errorf("%s: writing the container's configuration: %v %s", a.Name, err, out.String())
	}
	a.containers++
	state := filepath.Join(a.Home, runcState)
	cmd := exec.Command(runc, "--root", state, "run", "--bundle", filepath.Join(a.Home, bundleDir), fmt.Sprintf("%s-%d-%d", a.Name, os.Getpid(), a.containers))
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + a.Home, "XDG_RUNTIME_DIR=" + state}
	return cmd, nil
}
