// Package arm is one side of an experiment on the benchmark host: the user its processes run
// as, the cgroup they run in, the CPUs they run on, its port and its working directory. It
// installs a build into the working directory, starts the service there, stops it and
// everything it started, and reads what the arm's processes consume.
//
// Containment has two lines. With a cgroup (see package cgroup), every process the service
// starts stays in the arm's group (a process cannot leave it without write access to the
// common ancestor, which the arms' users never have), and cgroup.kill stops them all. With a
// dedicated user (no other arm, and not perf-host, runs as it), "every process of that uid" is
// exactly the arm's processes: a sweep stops them (SIGSTOP so that none can fork, then
// SIGKILL), setsid escapes included.
package arm

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/armns"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/cgroup"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/image"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/placement"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/privilege"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
)

// Identity is the user an arm's processes run as.
type Identity struct {
	Name string `json:"user"`
	UID  uint32 `json:"uid"`
	GID  uint32 `json:"gid"`
	Self bool   `json:"-"` // the user perf-host runs as: nothing to switch
}

// Lookup resolves a user name. Root is refused: an arm runs code from pull requests.
func Lookup(name string) (Identity, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return Identity{}, fmt.Errorf("user %q: %w (install.sh creates the arms' users)", name, err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	id := Identity{Name: name, UID: uint32(uid), GID: uint32(gid), Self: int(uid) == os.Getuid()}
	if uid == 0 && !id.Self {
		return Identity{}, fmt.Errorf("user %q is root: an arm never runs as root", name)
	}
	return id, nil
}

// Current is the user perf-host runs as.
func Current() (Identity, error) {
	u, err := user.Current()
	if err != nil {
		return Identity{}, err
	}
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return Identity{Name: u.Username, UID: uint32(os.Getuid()), GID: uint32(gid), Self: true}, nil
}

// Arm is one side of an experiment.
type Arm struct {
	Name string
	User Identity
	// Dedicated: no other arm, and not perf-host, runs as User, so every process of the uid
	// belongs to this arm and may be stopped as such.
	Dedicated bool
	Port      int
	Home      string         // owned by User, mode 0700; the build runs in Home/work
	Group     *cgroup.Group  // nil without cgroups
	CPUs      placement.CPUs // empty: anywhere
	// Every process of the arm gets this oom_score_adj (OOMChallenger, OOMChampion; 0: left
	// alone), so that the OOM killer takes the arms before the host (see PreferForOOM).
	OOMScoreAdj int
	// How the arm's own programs (its service, dependencies, setup) start through arm-exec
	// (package armns): with a /tmp, /var/tmp, /dev/shm and IPC of their own (Mounts), their
	// abstract unix sockets scoped; nil: they start directly and share the host's.
	Private *armns.Spec
	main    int          // the running service's pid
	deps    []dependency // its running dependencies, in the order they started

	image      *image.Config // the installed build's container image; nil for a tarball build
	containers int           // containers started, for their names
}

// WorkDir is where the arm's build runs: a fresh copy at every Install, and the service's HOME.
func (a *Arm) WorkDir() string { return filepath.Join(a.Home, "work") }

// StateDir is the service's STATE_DIR.
func (a *Arm) StateDir() string { return filepath.Join(a.Home, "state") }

// TmpDir is what the arm's programs see as /tmp and /var/tmp (with Private).
func (a *Arm) TmpDir() string { return filepath.Join(a.Home, "tmp") }

// Install stops whatever the arm still runs and replaces its working directory with a fresh
// copy of release, written by the arm's own user (so it owns its copy, and nothing but the copy
// is readable to it: the releases and the host's state are not). STATE_DIR is emptied too,
// unless the service's state is persistent: then the arm keeps it from one start to the next.
func (a *Arm) Install(release, state string) error {
	a.image = nil
	if err := a.Clear(); err != nil {
		return err
	}
	if a.Group != nil {
		// This start counts its own kills for memory: a run reads them to tell a kill for
		// memory from a crash.
		if err := a.Group.ForgetOOMKills(); err != nil {
			return err
		}
	}
	if err := a.checkHome(); err != nil {
		return err
	}
	// Everything the arm left in its home goes, STATE_DIR too unless the state is persistent.
	script := clean + ` && mkdir -m 0755 work && mkdir -m 0700 state && exec tar -x -C work -f -`
	if state == contract.StatePersistent {
		script = cleanButState + ` && mkdir -m 0755 work && mkdir -p -m 0700 state && exec tar -x -C work -f -`
	}
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = a.Home
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + a.Home}
	pipe, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	var out limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := a.Launch(cmd); err != nil {
		return fmt.Errorf("%s: copying the build: %w", a.Name, err)
	}
	werr := writeTar(pipe, release)
	pipe.Close()
	if err := cmd.Wait(); err != nil || werr != nil {
		return fmt.Errorf("%s: copying %s into %s: %v %v %s", a.Name, release, a.WorkDir(), err, werr, out.String())
	}
	a.image, err = image.Load(release)
	return err
}

// checkHome refuses a home directory that is not the arm's own and private.
func (a *Arm) checkHome() error {
	fi, err := os.Lstat(a.Home)
	if err != nil {
		return fmt.Errorf("%s: %v (install.sh creates one directory per arm, owned by its user)", a.Name, err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || st.Uid != a.User.UID || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s: %s must be a directory owned by %s with mode 0700 (is %v, uid %d); re-run install.sh", a.Name, a.Home, a.User.Name, fi.Mode(), st.Uid)
	}
	return nil
}

// writeTar streams the release as a tar: directories, regular files and symlinks (unpacking
// made sure nothing else is there and that every link resolves inside).
func writeTar(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name, h.Uid, h.Gid, h.Uname, h.Gname = filepath.ToSlash(rel), 0, 0, "", ""
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// Launch starts cmd as the arm's user, in the arm's cgroup, on the arm's CPUs (by affinity
// when the cgroup has no cpuset), raising only the capabilities that takes. It is how perf-host
// runs its own work in the arm (copying a build in, measuring and removing what the arm wrote);
// the arm's own programs start through launchProgram.
func (a *Arm) Launch(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	thread := privilege.Thread{}
	if !a.User.Self {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: a.User.UID, Gid: a.User.GID, Groups: []uint32{}}
		thread.Caps = append(thread.Caps, privilege.SetUID, privilege.SetGID)
	}
	if a.Group != nil {
		dir, err := a.Group.OpenDir()
		if err != nil {
			return err
		}
		defer dir.Close()
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(dir.Fd())
		if !cgroup.Inside(filepath.Dir(a.Group.Path)) {
			thread.Caps = append(thread.Caps, privilege.DACOverride)
		}
		thread.JoinV1 = a.Group.V1Dirs()
	}
	if a.Group == nil || !a.Group.Has("cpuset") {
		thread.CPUs = a.CPUs
	}
	if cmd.SysProcAttr.UidMappings != nil && !slices.Contains(thread.Caps, privilege.DACOverride) {
		// The child's ID maps (armns) are written from here before it runs: its /proc files are
		// root's until it executes, as perf-host's file capabilities make it not dumpable.
		thread.Caps = append(thread.Caps, privilege.DACOverride)
	}
	if err := privilege.Do(thread, cmd.Start); err != nil {
		return err
	}
	recordLaunch(cmd.Process.Pid, a)
	return a.PreferForOOM()
}

// launchProgram starts one of the arm's own programs as Launch does, through arm-exec as the
// host gives it (Private): in mounts and IPC of its own, its abstract unix sockets scoped.
func (a *Arm) launchProgram(cmd *exec.Cmd) error {
	if a.Private != nil {
		a.Private.Wrap(cmd)
	}
	return a.Launch(cmd)
}

// launchService starts the arm's service or setup: a container image's through runc, which
// gives the container mounts and IPC of its own (arm-exec only scopes its abstract unix
// sockets); a tarball build's as launchProgram does.
func (a *Arm) launchService(cmd *exec.Cmd) error {
	if a.image != nil {
		if a.Private != nil {
			a.Private.WrapScopeOnly(cmd)
		}
		return a.Launch(cmd)
	}
	return a.launchProgram(cmd)
}

// Started records the arm's running service, whose descendants are the arm's processes when
// neither a cgroup nor a dedicated user says more.
func (a *Arm) Started(pid int) { a.main = pid }

// Signal sends sig to the process group of the arm's service.
func (a *Arm) Signal(sig syscall.Signal) error {
	if a.main == 0 {
		return nil
	}
	return privilege.Do(privilege.Thread{Caps: a.killCaps()}, func() error {
		err := syscall.Kill(-a.main, sig)
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	})
}

func (a *Arm) killCaps() []privilege.Cap {
	if a.User.Self {
		return nil
	}
	return []privilege.Cap{privilege.Kill}
}

// Procs lists the arm's live processes: its cgroup's, else its user's (when dedicated), else
// its service's descendants.
func (a *Arm) Procs() []Proc {
	switch {
	case a.Group != nil:
		pids, _ := a.Group.Procs()
		var out []Proc
		for _, pid := range pids {
			if p, err := ReadProc(pid); err == nil && p.State != 'Z' {
				out = append(out, p)
			}
		}
		return out
	case a.Dedicated:
		return OfUser(a.User.UID)
	case a.main != 0:
		return append(Descendants(a.main), a.dependencyProcs()...)
	}
	return a.dependencyProcs()
}

// clearWait bounds how long Clear waits for the kernel to finish killing.
const clearWait = 5 * time.Second

// Clear kills every process of the arm, by cgroup.kill and, with a dedicated user, by a sweep
// of the user's processes; with neither, by the service's process group and descendants. It
// returns an error naming whatever still runs.
func (a *Arm) Clear() error {
	var errs []error
	if a.Group != nil {
		if _, err := a.Group.Kill(clearWait); err != nil {
			errs = append(errs, err)
		}
	}
	switch {
	case a.Dedicated:
		if err := a.sweep(func() []Proc { return OfUser(a.User.UID) }); err != nil {
			errs = append(errs, err)
		}
	case a.Group == nil && (a.main != 0 || len(a.deps) > 0):
		a.Signal(syscall.SIGKILL)
		if err := a.sweep(a.Procs); err != nil {
			errs = append(errs, err)
		}
	}
	ReapZombies(a)
	if left := a.Procs(); len(left) > 0 {
		errs = append(errs, fmt.Errorf("%s: still running after SIGKILL: %s", a.Name, Describe(left)))
	}
	a.deps = nil
	return errors.Join(errs...)
}

// sweep stops every process list returns (so that none can fork), until a pass finds none
// left running, then kills them all, until none is left.
func (a *Arm) sweep(list func() []Proc) error {
	deadline := time.Now().Add(clearWait)
	return privilege.Do(privilege.Thread{Caps: a.killCaps()}, func() error {
		for _, sig := range []syscall.Signal{syscall.SIGSTOP, syscall.SIGKILL} {
			for {
				pending := 0
				for _, p := range list() {
					if sig == syscall.SIGSTOP && (p.State == 'T' || p.State == 't') {
						continue
					}
					pending++
					syscall.Kill(p.Pid, sig)
				}
				if pending == 0 {
					break
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("%s: %d processes still running after %v of %v", a.Name, pending, clearWait, sig)
				}
				time.Sleep(2 * time.Millisecond)
			}
		}
		return nil
	})
}

// limitedBuffer keeps the first 4 KiB written to it, for error messages.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 4096 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }

// Instance is where the arm runs its service, with the extra ports it was given.
func (a *Arm) Instance(ports map[string]int) service.Instance {
	in := service.Instance{Dir: a.WorkDir(), Port: a.Port, Ports: ports, StateDir: a.StateDir()}
	if a.image != nil {
		in.Container = a.container
	}
	return in
}

// StartService starts spec in the arm's working directory on the arm's ports.
func (a *Arm) StartService(name string, spec contract.ServiceSpec, ports map[string]int, log service.Log) (*service.Process, error) {
	p, err := service.Start(name, spec, a.Instance(ports), log, a.launchService)
	if err != nil {
		return nil, err
	}
	a.Started(p.Pid())
	return p, nil
}

// Setup runs spec.Setup in the arm's fresh copy as the service would run (the arm's user,
// cgroup, CPUs and environment), with its output appended to its log, within its timeout.
// Whatever it leaves running is stopped: the service starts alone. The error says how it
// ended; the log holds its output.
func (a *Arm) Setup(spec contract.ServiceSpec, ports map[string]int, log service.Log) (time.Duration, error) {
	cmd, err := a.Instance(ports).Command(spec, spec.Setup)
	if err != nil {
		return 0, err
	}
	out, err := log.Open(fmt.Sprintf("--- perf-host: setup of %s (%s): %s\n", a.Name, a.Instance(ports).Describe(), strings.Join(cmd.Args, " ")))
	if err != nil {
		return 0, err
	}
	cmd.Stdout, cmd.Stderr = out.W, out.W
	start := time.Now()
	err = a.runBounded(a.launchService, cmd, time.Duration(spec.SetupTimeoutSeconds*float64(time.Second)))
	took := time.Since(start)
	out.W.Close()
	if errors.Is(err, errTimedOut) {
		err = fmt.Errorf("did not finish within service.setup_timeout_seconds %g and was stopped", spec.SetupTimeoutSeconds)
	}
	// Whatever the setup left running goes too: the service starts alone, beside its
	// dependencies.
	if cerr := a.clearLeftovers(); err == nil {
		err = cerr
	}
	out.Wait(2 * time.Second) // what it left running held its output open until now
	return took, err
}

var errTimedOut = errors.New("timed out")

// runBounded runs cmd in the arm (started by launch: Launch, or launchService) until it
// exits, or kills everything of the arm at timeout (errTimedOut). A failed exit is its status,
// "exit status 3".
func (a *Arm) runBounded(launch func(*exec.Cmd) error, cmd *exec.Cmd, timeout time.Duration) error {
	if err := launch(cmd); err != nil {
		return fmt.Errorf("cannot start %q in %s: %w", cmd.Path, cmd.Dir, err)
	}
	a.Started(cmd.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if _, ok := err.(*exec.ExitError); ok {
			return errors.New(err.Error())
		}
		return err
	case <-time.After(timeout):
		a.Clear()
		<-done
		return errTimedOut
	}
}

// DiskUsage is the bytes on disk of the arm's working copy and of its STATE_DIR, as du run by
// the arm's own user reads them (it alone may read them), within a few seconds.
func (a *Arm) DiskUsage() (work, state int64, err error) {
	cmd := exec.Command("/usr/bin/du", "-s", "-B1", "--", "work", "state")
	cmd.Dir = a.Home
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	var out limitedBuffer
	cmd.Stdout = &out
	if err := a.runBounded(a.Launch, cmd, 10*time.Second); err != nil {
		return 0, 0, fmt.Errorf("du: %w", err)
	}
	sizes := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if n, dir, ok := strings.Cut(line, "\t"); ok {
			sizes[dir], _ = strconv.ParseInt(n, 10, 64)
		}
	}
	return sizes["work"], sizes["state"], nil
}

// Stop ends the arm's service: SIGTERM to its process group and up to grace for it to exit,
// then the same for its dependencies, then Clear, which kills whatever the arm still runs (what the service started, in another
// session or process group too). The error names what could not be stopped.
func (a *Arm) Stop(p *service.Process, grace time.Duration) error {
	select {
	case <-p.Exited():
	default:
		if err := a.Signal(syscall.SIGTERM); err != nil {
			return fmt.Errorf("stopping %s (pid %d): %w", a.Name, p.Pid(), err)
		}
		select {
		case <-p.Exited():
		case <-time.After(grace):
		}
	}
	a.stopDependencies(grace)
	err := a.Clear()
	select {
	case <-p.Exited():
	case <-time.After(grace):
		err = errors.Join(err, fmt.Errorf("%s (pid %d) did not exit after SIGKILL", a.Name, p.Pid()))
	}
	return err
}

// PrivateInstalled says why the arm's programs cannot start through arm-exec, as far as that
// shows without starting one: arm-exec missing, or the arm's home under a directory its
// programs see as their own.
func (a *Arm) PrivateInstalled() error {
	if a.Private == nil {
		return errors.New("no arm-exec set up")
	}
	if _, err := os.Stat(a.Private.Exec); err != nil {
		return fmt.Errorf("%v (install.sh installs arm-exec beside perf-host)", err)
	}
	for _, dir := range append(slices.Clone(armns.Shared), "/dev/shm") {
		if a.Private.Mounts && (a.Home == dir || strings.HasPrefix(a.Home, dir+"/")) {
			return fmt.Errorf("the arm's home %s is under %s, which its programs see as their own (re-run install.sh with a --root elsewhere)", a.Home, dir)
		}
	}
	return nil
}

// CheckPrivate starts /bin/true as the arm's programs start (through arm-exec, as Private
// says), and says why it could not: user namespaces off or restricted on the host, or what
// PrivateInstalled finds. Nothing of the arm may run meanwhile (it is cleared on a timeout):
// only a holder of the host lock may call it.
func (a *Arm) CheckPrivate() error {
	if err := a.PrivateInstalled(); err != nil {
		return err
	}
	cmd := exec.Command("/bin/true")
	cmd.Dir = a.Home
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	var out limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := a.runBounded(a.launchProgram, cmd, 10*time.Second); err != nil {
		return fmt.Errorf("%v %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}
