// Package detached starts perf-host's own long-lived processes (a run's executor, the champion
// supervisor) so that they outlive the SSH connection that asked for them, and tells whether
// one still runs.
package detached

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
)

// Launcher starts `Exe VERB FLAGS ARGS` detached, with the host's configuration as flags.
type Launcher struct {
	Exe   string   // perf-host's own path
	Flags []string // the host's configuration (config.Config.Flags)
	Dir   string   // the working directory: the host's root
}

// Launch starts perf-host VERB ARGS in a session of its own, in the group of place (the
// executor with the load generator, the supervisor in its own), logging to logPath, so it
// outlives the SSH connection that asked for it. Both detached processes start here alike.
func (l Launcher) Launch(logPath string, place *arm.Arm, extra []*os.File, verb string, args ...string) (*exec.Cmd, error) {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(l.Exe, append(append([]string{verb}, l.Flags...), args...)...)
	cmd.Dir = l.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd, place.Launch(cmd)
}

// Alive reports whether pid runs (and is not a zombie) and, if verb is set, whether its
// command line contains it (a recycled pid is not our process).
func Alive(pid int, verb string) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	if verb == "" {
		return true
	}
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.Contains(string(cmdline), verb)
}
