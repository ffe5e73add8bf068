// Package profile samples both arms' CPU stacks during a run and turns the samples into what a
// report needs (docs/design/0021-profiles.md): one pprof profile per arm, each of its own
// measured slices only, and per slice the samples of the functions that carry most of either
// arm's CPU, from which the client computes which functions' CPU per request moved.
//
// It runs Linux perf (`perf record -e cpu-clock`, the software clock, which works on VMs without
// hardware counters) system-wide but counting only the arms' cgroups, one named event per arm,
// so that a sample says whose it is and nothing else on the host (the load generator, perf-host)
// is interrupted. perf reads only the host's own system files to name frames (a symbol farm of
// /usr, /lib, /bin, …); the arms' own binaries are named here from the deployed releases with
// Go's debug/elf, so no code of a pull request is ever parsed by perf.
package profile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/privilege"
)

// Arm is one arm to sample.
type Arm struct {
	// champion or challenger: the name of its perf event and of its profile.
	Name string
	// Its cgroup, as perf -G takes it: a path under the cgroup v2 mount.
	Cgroup string
	// Frames in files under Work (the arm's working copy) are named from the same file under
	// Release (the deployed build perf-host owns); empty when the arm's files are not a release.
	Work, Release string
}

// Config is how a run is sampled.
type Config struct {
	// The perf binary ("perf": from the PATH).
	Perf string
	// Samples per second per CPU while an arm runs there.
	FrequencyHz int
	// Where the samples are written (the run's directory).
	Dir  string
	Arms []Arm
}

// DefaultFrequencyHz is 499 Hz: a prime, so the sampling does not lock step with periodic work
// (a 1 ms timer, a 10 ms tick), and a sample every 2 ms of an arm's CPU.
const DefaultFrequencyHz = 499

// Sampler is perf record running for one run.
type Sampler struct {
	cfg     Config
	cmd     *exec.Cmd
	data    string
	stderr  *bytes.Buffer
	exited  chan struct{}
	waitErr error
	// CLOCK_MONOTONIC minus the wall clock when perf started: perf stamps samples on the
	// monotonic clock, the result's slices on the wall clock.
	monoMinusWall time.Duration
}

// Start starts perf record on the arms' cgroups and returns once it samples, or says why it
// cannot (no perf, no permission, no cgroup): the run then goes on without profiles.
func Start(cfg Config) (*Sampler, error) {
	if cfg.Perf == "" {
		cfg.Perf = "perf"
	}
	if cfg.FrequencyHz == 0 {
		cfg.FrequencyHz = DefaultFrequencyHz
	}
	perf, err := exec.LookPath(cfg.Perf)
	if err != nil {
		return nil, fmt.Errorf("no perf on this host (%v): install Debian's linux-perf", err)
	}
	if len(cfg.Arms) == 0 {
		return nil, errors.New("no arm to sample")
	}
	s := &Sampler{cfg: cfg, data: filepath.Join(cfg.Dir, "profile.data"), stderr: &bytes.Buffer{}, exited: make(chan struct{})}
	args := []string{"record", "--quiet", "-a", "-g", "-F", strconv.Itoa(cfg.FrequencyHz), "-k", "CLOCK_MONOTONIC",
		// No build-id pass over the binaries sampled: perf reads no file an arm wrote.
		"--no-buildid", "--no-buildid-cache", "-o", s.data}
	for _, a := range cfg.Arms {
		if strings.ContainsAny(a.Cgroup, ",\n") || a.Cgroup == "" {
			return nil, fmt.Errorf("arm %s: cgroup %q cannot be named to perf", a.Name, a.Cgroup)
		}
		args = append(args, "-e", "cpu-clock/name="+a.Name+"/", "-G", a.Cgroup)
	}
	s.cmd = exec.Command(perf, args...)
	s.cmd.Stdout, s.cmd.Stderr = s.stderr, s.stderr
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if os.Geteuid() != 0 {
		// An installed host's perf-host holds these as permitted capabilities (install.sh); perf
		// record alone gets them, and perf script, which reads what it wrote, none.
		s.cmd.SysProcAttr.AmbientCaps = []uintptr{uintptr(privilege.Perfmon), uintptr(privilege.SysPtrace)}
	}
	s.monoMinusWall = monotonicNow() - time.Duration(time.Now().UnixNano())
	if err := s.cmd.Start(); err != nil {
		if errors.Is(err, syscall.EPERM) {
			return nil, fmt.Errorf("perf record: perf-host lacks CAP_PERFMON and CAP_SYS_PTRACE (install.sh grants them with setcap): %v", err)
		}
		return nil, fmt.Errorf("perf record: %v", err)
	}
	go func() { s.waitErr = s.cmd.Wait(); close(s.exited) }()
	// perf writes its header once every event is open: that file is the sign it samples.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if st, err := os.Stat(s.data); err == nil && st.Size() > 0 {
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("perf record exited at start (%v): %s", s.waitErr, strings.TrimSpace(lastLines(s.stderr.String(), 3)))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.kill()
			return nil, errors.New("perf record did not start within 10 s")
		}
	}
}

// CPU is the CPU time perf has used so far (its own process: reading the kernel's sample
// buffers and writing them), for the host's accounting of what ran besides the arms.
func (s *Sampler) CPU() time.Duration {
	select {
	case <-s.exited:
		return s.cmd.ProcessState.UserTime() + s.cmd.ProcessState.SystemTime()
	default:
		p, _ := arm.ReadProc(s.cmd.Process.Pid)
		return time.Duration(p.CPUUs) * time.Microsecond
	}
}

// Stop ends the sampling: perf writes its last samples and exits.
func (s *Sampler) Stop() error {
	select {
	case <-s.exited:
		return fmt.Errorf("perf record exited during the run (%v): %s", s.waitErr, strings.TrimSpace(lastLines(s.stderr.String(), 3)))
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.kill()
		return errors.New("perf record did not stop within 30 s of SIGINT")
	}
	return nil
}

func (s *Sampler) kill() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
}

// Remove deletes the raw samples once the profiles are built.
func (s *Sampler) Remove() error { return os.Remove(s.data) }

func monotonicNow() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Duration(ts.Nano())
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
