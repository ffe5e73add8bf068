package armns

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ScopeABI is the first Landlock ABI that scopes abstract unix sockets (Linux 6.12).
const ScopeABI = 6

// LandlockABI is the running kernel's Landlock ABI version: 0 when it has no Landlock, or has
// it built in but not enabled.
func LandlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// scopeAbstractSockets puts the calling thread, and what it executes and starts, in a Landlock
// domain of its own that may connect to (and send datagrams to) only the abstract unix sockets
// made inside it: not the other arm's, not the host's. It handles no file or network access, so
// a container runtime it executes still mounts and every TCP connect is as before; like any
// Landlock domain it also keeps its processes from ptrace-like access (/proc/PID/environ, mem,
// pidfd_getfd) to processes outside it. No new privileges comes first, as Landlock asks of a
// thread without CAP_SYS_ADMIN; an arm's programs gain none from a set-user-ID program anyway
// (docs/design/0034-abstract-sockets-scoped.md).
func scopeAbstractSockets() error {
	attr := unix.LandlockRulesetAttr{Scoped: unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("scoping abstract unix sockets: landlock_create_ruleset: %w (Landlock ABI %d; %d has scopes)", errno, LandlockABI(), ScopeABI)
	}
	defer unix.Close(int(fd))
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("scoping abstract unix sockets: no new privileges: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("scoping abstract unix sockets: landlock_restrict_self: %w", errno)
	}
	return nil
}
