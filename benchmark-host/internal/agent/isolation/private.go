package isolation

import (
	"errors"
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
// the kernel can, with or without the mounts (docs/design/0034-abstract-sockets-scoped.md);
// otherwise the arms share the host's, and the isolation's line and a note say why. It does not
// stop the arms from running: it weakens the host's defences, not the measurement. Without
// start it starts nothing (status: a run may be using the arms) and checks only that arm-exec
// is installed (docs/design/0032-status-starts-nothing-in-the-arms.md).
func setUpPrivateMounts(cfg config.Config, iso *Isolation, start bool) {
	info := &iso.Info
	const dirs = "/tmp, /var/tmp, /run/lock, /dev/shm and SysV IPC"
	shared := "; their programs share the host's " + dirs
	if !iso.Champion.Dedicated || !iso.Challenger.Dedicated {
		info.PrivateMounts = "none: the arms do not run as users of their own (local mode?)" + shared + "; " + sharedSockets
		return
	}
	sockets, note := abstractSockets(armns.LandlockABI())
	scope := note == ""
	var mounts string // what the arms' programs get of the shared directories
	if info.MaxProcs.By == "RLIMIT_NPROC" {
		// The kernel counts a process in a user namespace against the namespace's owner too:
		// perf-host's user, whose RLIMIT_NPROC is the arms' bound here. One arm's fork bomb
		// would leave perf-host and the other arm no process to start (measured: the run's
		// executor died, unable to start a thread).
		mounts = "none: the arms' tasks are bounded by RLIMIT_NPROC, which their programs in namespaces of their own would take from perf-host's user (a pids controller, cgroup v2's or v1's, bounds them instead)" + shared
		info.Notes = append(info.Notes, "the arms' programs share the host's "+dirs+": no cgroup pids controller (re-run install.sh)")
	} else if err := throughArmExec(cfg, iso, start, true, scope); err != nil {
		mounts = fmt.Sprintf("none: arm-exec cannot start the arms' programs in namespaces of their own (%v); they share the host's %s", err, dirs)
		info.Notes = append(info.Notes, "the arms' programs share the host's "+dirs+": "+err.Error())
	} else {
		shm := "half the host's memory"
		if cfg.ArmMemoryBytes > 0 {
			shm = SizeString(uint64(cfg.ArmMemoryBytes))
		}
		mounts = fmt.Sprintf("arm-exec: each arm's programs in user, mount and IPC namespaces of their own: /tmp, /var/tmp and /run/lock its home's tmp on its own disk, /dev/shm a tmpfs of %s, SysV IPC and message queues their own", shm)
	}
	ownMounts := iso.Champion.Private != nil
	// The scope needs no namespace: without the mounts, arm-exec may still give it alone.
	if !ownMounts && scope {
		if err := throughArmExec(cfg, iso, start, false, true); err != nil {
			sockets, note = sharedSockets, "the arms' programs can reach each other's and the host's abstract unix sockets: arm-exec cannot scope them ("+err.Error()+")"
		}
	}
	info.PrivateMounts = mounts + "; " + sockets
	if note != "" {
		info.Notes = append(info.Notes, note)
	}
	if ownMounts && !start {
		info.PrivateMounts += " (installed; each run's pre-flight check starts a program through it)"
	}
}

// throughArmExec has the arms' programs start through arm-exec, in namespaces of their own
// (mounts), their abstract unix sockets scoped (scope), and checks that they can; where they
// cannot, they start directly (Private nil) and the error says why.
func throughArmExec(cfg config.Config, iso *Isolation, start, mounts, scope bool) error {
	exe, err := armExec()
	if err != nil { // perf-host's own path, beside which arm-exec is, is unknown
		return err
	}
	var why []string
	for _, a := range []*arm.Arm{iso.Champion, iso.Challenger} {
		a.Private = &armns.Spec{Exec: exe, Mounts: mounts, Tmp: a.TmpDir(),
			ShmBytes: max(cfg.ArmMemoryBytes, 0), UID: a.User.UID, GID: a.User.GID, ScopeSockets: scope}
		if err := checkPrivate(a, start); err != nil {
			why = append(why, fmt.Sprintf("%s: %v", a.Name, err))
		}
	}
	if len(why) > 0 {
		iso.Champion.Private, iso.Challenger.Private = nil, nil
		return errors.New(strings.Join(why, "; "))
	}
	return nil
}

// armExec is where perf-host finds arm-exec: installed beside it.
var armExec = func() (string, error) {
	exe, err := os.Executable()
	return filepath.Join(filepath.Dir(exe), "arm-exec"), err
}

// checkPrivate checks that the arm's programs start through arm-exec as its Private says:
// by starting one (start), or by what shows without (status).
func checkPrivate(a *arm.Arm, start bool) error {
	if start {
		return a.CheckPrivate()
	}
	return a.PrivateInstalled()
}

// PrivateMountsFinding is the pre-flight check of the arms' own /tmp, /dev/shm and IPC: it says
// what the arms' programs have, or why they share the host's. Never a flag: see
// setUpPrivateMounts.
func (iso *Isolation) PrivateMountsFinding() contract.Finding {
	return contract.Finding{Check: "arm_private_mounts", Status: contract.FindingOK, Detail: iso.Info.PrivateMounts}
}

// sharedSockets is the line's part where the arms' abstract unix sockets are not scoped.
const sharedSockets = "abstract unix sockets shared with the host and the other arm"

// abstractSockets is what the isolation's line says of the arms' abstract unix sockets on a
// kernel of Landlock ABI abi, and the note where they are shared
// (docs/design/0034-abstract-sockets-scoped.md).
func abstractSockets(abi int) (line, note string) {
	if abi >= armns.ScopeABI {
		return fmt.Sprintf("abstract unix sockets: each program reaches only its own and its children's (Landlock ABI %d scope)", abi), ""
	}
	return sharedSockets,
		fmt.Sprintf("the arms' programs can reach each other's and the host's abstract unix sockets: the kernel's Landlock has no scopes (ABI %d; Linux 6.12 brings ABI %d; if it is built but off, add landlock to the lsm= boot parameter)", abi, armns.ScopeABI)
}
