// Package armns gives the programs an arm runs (its service, its dependencies, its setup) their
// own of what every user of a host otherwise shares: the directories everyone may write (/tmp,
// /var/tmp, /run/lock), /dev/shm, SysV IPC and POSIX message queues. perf-host starts each such
// program through arm-exec (Wrap), as the arm's user, in new user, mount and IPC namespaces; the
// user namespace maps the arm's user and group to themselves alone, and gives arm-exec
// CAP_SYS_ADMIN over those namespaces only, as an ambient capability. arm-exec (Enter) binds the
// arm's own directory on its own filesystem over the shared directories, mounts a fresh tmpfs of
// the arm's memory limit on /dev/shm and a fresh mqueue on /dev/mqueue, drops the capability and
// executes the program, which runs without any.
//
// What it mounted stays in its mount namespace: the host never sees it, and it all goes when
// the arm's last process exits (the tmpfs's pages, the IPC objects). What the program cannot do:
// undo the mounts (no capability; a namespace it makes itself copies them locked), reach the
// host's /tmp or the other arm's, or gain privilege from a set-user-ID program of the host (root
// is not mapped in its namespace). See docs/design/0028-arm-private-mounts.md.
//
// Where the kernel has Landlock scopes, arm-exec also keeps each program off the abstract unix
// sockets it did not make (they belong to the network namespace, which the arms share with the
// host): a container runtime is started through it for that alone (WrapScopeOnly). See
// docs/design/0034-abstract-sockets-scoped.md.
package armns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Shared are the host's directories that everyone may write, which the arm's programs see as
// its own directory instead.
var Shared = []string{"/tmp", "/var/tmp", "/run/lock"}

// Spec is how one arm's programs are started through arm-exec.
type Spec struct {
	Exec string // the arm-exec program, installed beside perf-host
	// In user, mount and IPC namespaces of their own, with the mounts below; false where the
	// host cannot give them (the abstract sockets may still be scoped).
	Mounts   bool
	Tmp      string // the arm's directory that becomes /tmp, /var/tmp and /run/lock
	ShmBytes int64  // /dev/shm's size; 0: the kernel's default, half the memory
	UID, GID uint32 // the arm's user and group
	// Each program may reach only the abstract unix sockets made by itself and what it starts
	// (a Landlock scope; the kernel's LandlockABI must be ScopeABI or later).
	ScopeSockets bool
}

// Wrap makes cmd start through arm-exec as s says: in namespaces of its own (Mounts), its
// abstract unix sockets scoped (ScopeSockets); neither, and cmd is left as it is. Credentials,
// the cgroup and the rest of cmd's SysProcAttr are kept; the parent writing the namespace's ID
// maps needs CAP_SETUID and CAP_SETGID, which starting an arm's program as its user needs anyway.
func (s Spec) Wrap(cmd *exec.Cmd) {
	if !s.Mounts {
		s.WrapScopeOnly(cmd)
		return
	}
	s.wrap(cmd, "--tmp", s.Tmp, "--shm-bytes", strconv.FormatInt(s.ShmBytes, 10))
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	a := cmd.SysProcAttr
	a.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: int(s.UID), HostID: int(s.UID), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: int(s.GID), HostID: int(s.GID), Size: 1}}
	// Allowed, so that the child can drop perf-host's supplementary groups (Credential.Groups).
	a.GidMappingsEnableSetgroups = true
	a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
}

// WrapScopeOnly makes cmd start through arm-exec with its abstract unix sockets scoped and
// nothing else, when s scopes them: for a container runtime, which makes the container's
// namespaces and mounts itself.
func (s Spec) WrapScopeOnly(cmd *exec.Cmd) {
	if s.ScopeSockets {
		s.wrap(cmd)
	}
}

func (s Spec) wrap(cmd *exec.Cmd, flags ...string) {
	args := append([]string{s.Exec}, flags...)
	if s.ScopeSockets {
		args = append(args, flagScope)
	}
	args = append(args, "--", cmd.Path)
	cmd.Path, cmd.Args = s.Exec, append(args, cmd.Args...)
}

const flagScope = "--scope-abstract-sockets"

// Usage is arm-exec's command line.
const Usage = "usage: arm-exec [--tmp DIR --shm-bytes N] [" + flagScope + "] -- PATH ARGV0 [ARGS…]"

// entry is what arm-exec was asked to do.
type entry struct {
	tmp   string // "": no mounts of its own (it runs in the host's namespaces)
	shm   int64
	scope bool
	path  string
	argv  []string
}

func parseEntry(args []string) (entry, error) {
	var e entry
	shm := ""
	seen := map[string]bool{}
	for len(args) > 0 && args[0] != "--" {
		flag := args[0]
		if seen[flag] {
			return e, fmt.Errorf("%s given twice: %s", flag, Usage)
		}
		seen[flag] = true
		switch {
		case flag == flagScope:
			e.scope, args = true, args[1:]
		case (flag == "--tmp" || flag == "--shm-bytes") && len(args) > 1 && args[1] != "" && !strings.HasPrefix(args[1], "-"):
			if flag == "--tmp" {
				e.tmp = args[1]
			} else {
				shm = args[1]
			}
			args = args[2:]
		default:
			return e, fmt.Errorf("%q: %s", flag, Usage)
		}
	}
	if len(args) < 3 || (e.tmp == "") != (shm == "") || (e.tmp == "" && !e.scope) {
		return e, errors.New(Usage)
	}
	if e.tmp != "" {
		if !filepath.IsAbs(e.tmp) {
			return e, fmt.Errorf("--tmp: an absolute path, not %q", e.tmp)
		}
		var err error
		if e.shm, err = strconv.ParseInt(shm, 10, 64); err != nil || e.shm < 0 || shm[0] == '+' {
			return e, fmt.Errorf("--shm-bytes: a size in bytes, not %q", shm)
		}
	}
	e.path, e.argv = args[1], args[2:]
	return e, nil
}

// Enter is arm-exec (Usage). With --tmp it mounts (Wrap started it in namespaces of its own);
// with the scope flag it scopes abstract unix sockets; then it drops every capability and
// executes PATH. It returns only on failure.
func Enter(args []string) error {
	e, err := parseEntry(args)
	if err != nil {
		return err
	}
	// Capabilities and the Landlock domain are per thread: the one that mounts, scopes, drops
	// and executes is one.
	runtime.LockOSThread()
	if e.tmp != "" {
		if err := mountPrivate(e.tmp, e.shm); err != nil {
			return err
		}
	}
	if e.scope {
		if err := scopeAbstractSockets(); err != nil {
			return err
		}
	}
	// Every set emptied, the inheritable one too (the clone put CAP_SYS_ADMIN there to make it
	// ambient), so no program it executes can get the capability back.
	var none [2]unix.CapUserData
	if err := unix.Capset(&unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}, &none[0]); err != nil {
		return fmt.Errorf("dropping CAP_SYS_ADMIN: %w", err)
	}
	return syscall.Exec(e.path, e.argv, os.Environ())
}

// mountPrivate makes the mounts: nothing propagates to the host, the shared directories are tmp,
// /dev/shm and /dev/mqueue are fresh.
func mountPrivate(tmp string, shm int64) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	// Bound by descriptor: once /tmp is covered, a path under it no longer leads there.
	fd, err := unix.Open(tmp, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", tmp, err)
	}
	defer unix.Close(fd)
	for _, dir := range Shared {
		if !isDir(dir) {
			continue
		}
		if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", fd), dir, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("binding %s on %s: %w", tmp, dir, err)
		}
	}
	if isDir("/dev/shm") {
		opts := "mode=1777"
		if shm > 0 {
			opts += ",size=" + strconv.FormatInt(shm, 10)
		}
		if err := unix.Mount("shm", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("mounting a tmpfs on /dev/shm: %w", err)
		}
	}
	if isDir("/dev/mqueue") {
		if err := unix.Mount("mqueue", "/dev/mqueue", "mqueue", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mounting /dev/mqueue: %w", err)
		}
	}
	return nil
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
