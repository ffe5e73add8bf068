package isolation

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/config"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/armns"
)

// setUpPrivateMounts gives each arm of a user of its own a /tmp, /var/tmp, /run/lock, /dev/shm
// and IPC of its own for its programs, through arm-exec beside perf-host, when a program starts
// so here (docs/design/0028-arm-private-mounts.md), and scopes their abstract unix sockets where
// the kernel can (docs/design/0034-abstract-sockets-scoped.md); otherwise the arms share the host's, and the
// isolation's line and a note say why. It does not stop the arms from running: it weakens the
// host's defences, not the measurement. Without start it starts nothing (status: a run may be
// using the arms) and checks only that arm-exec is installed
// (docs/design/0032-status-starts-nothing-in-the-arms.md).
func setUpPrivateMounts(cfg config.Config, iso *Isolation, start bool) {
	info := &iso.Info
	const dirs = "/tmp, /var/tmp, /run/lock, /dev/shm and SysV IPC"
	shared := "; their programs share the host's " + dirs
	switch {
	case !iso.Champion.Dedicated || !iso.Challenger.Dedicated:
		info.PrivateMounts = "none: the arms do not run as users of their own (local mode?)" + shared
		return
	case info.MaxProcs.By == "RLIMIT_NPROC":
		// The kernel counts a process in a user namespace against the namespace's owner too:
		// perf-host's user, whose RLIMIT_NPROC is the arms' bound here. One arm's fork bomb
		// would leave perf-host and the other arm no process to start (measured: the run's
		// executor died, unable to start a thread).
		info.PrivateMounts = "none: the arms' tasks are bounded by RLIMIT_NPROC, which their programs in namespaces of their own would take from perf-host's user (a pids controller, cgroup v2's or v1's, bounds them instead)" + shared
		info.Notes = append(info.Notes, "the arms' programs share the host's "+dirs+": no cgroup pids controller (re-run install.sh)")
		return
	}
	exe, err := os.Executable()
	abi := armns.LandlockABI()
	scope := abi >= armns.ScopeABI
	var why []string
	for _, a := range []*arm.Arm{iso.Champion, iso.Challenger} {
		a.Private = &armns.Spec{Exec: filepath.Join(filepath.Dir(exe), "arm-exec"), Tmp: a.TmpDir(), ShmBytes: max(cfg.ArmMemoryBytes, 0), UID: a.User.UID, GID: a.User.GID, ScopeSockets: scope}
		switch {
		case err != nil: // perf-host's own path, beside which arm-exec is, is unknown
		case start:
			err = a.CheckPrivate()
		default:
			err = a.PrivateInstalled()
		}
		if err != nil {
			why = append(why, fmt.Sprintf("%s: %v", a.Name, err))
		}
	}
	if len(why) > 0 {
		iso.Champion.Private, iso.Challenger.Private = nil, nil
		info.PrivateMounts = fmt.Sprintf("none: arm-exec cannot start the arms' programs in namespaces of their own (%s); they share the host's %s", strings.Join(why, "; "), dirs)
		info.Notes = append(info.Notes, "the arms' programs share the host's "+dirs+": "+strings.Join(why, "; "))
		return
	}
	shm := "half the host's memory"
	if cfg.ArmMemoryBytes > 0 {
		shm = SizeString(uint64(cfg.ArmMemoryBytes))
	}
	info.PrivateMounts = fmt.Sprintf("arm-exec: each arm's programs in user, mount and IPC namespaces of their own: /tmp, /var/tmp and /run/lock its home's tmp on its own disk, /dev/shm a tmpfs of %s, SysV IPC and message queues their own", shm)
	sockets, note := abstractSockets(abi)
	info.PrivateMounts += "; " + sockets
	if note != "" {
		info.Notes = append(info.Notes, note)
	}
	if !start {
		info.PrivateMounts += " (installed; each run's pre-flight check starts a program through it)"
	}
}

// PrivateMountsFinding is the pre-flight check of the arms' own /tmp, /dev/shm and IPC: it says
// what the arms' programs have, or why they share the host's. Never a flag: see
// setUpPrivateMounts.
func (iso *Isolation) PrivateMountsFinding() contract.Finding {
	return contract.Finding{Check: "arm_private_mounts", Status: contract.FindingOK, Detail: iso.Info.PrivateMounts}
}

// abstractSockets is what the isolation's line says of the arms' abstract unix sockets on a
// kernel of Landlock ABI abi, and the note where they are shared
// (docs/design/0034-abstract-sockets-scoped.md).
func abstractSockets(abi int) (line, note string) {
	if abi >= armns.ScopeABI {
		return fmt.Sprintf("abstract unix sockets: each program reaches only its own and its children's (Landlock ABI %d scope)", abi), ""
	}
	return "abstract unix sockets shared with the host and the other arm",
		fmt.Sprintf("the arms' programs can reach each other's and the host's abstract unix sockets: the kernel's Landlock has no scopes (ABI %d; Linux 6.12 brings ABI %d; if it is built but off, add landlock to the lsm= boot parameter)", abi, armns.ScopeABI)
}
