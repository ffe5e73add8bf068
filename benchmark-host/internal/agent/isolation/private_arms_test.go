package isolation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/config"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/arm"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/armns"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/sshtest"
)

// A host that cannot give the arms' programs mounts of their own (here: tasks bounded by
// RLIMIT_NPROC) still scopes their abstract unix sockets, which needs no namespace; without
// arm-exec it cannot, and the line and a note say they are shared.
func TestArmsWithoutMountsStillGetTheScope(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("starting a program as another user needs root (as in CI)")
	}
	if abi := armns.LandlockABI(); abi < armns.ScopeABI {
		t.Skipf("the kernel's Landlock ABI is %d; scopes came with %d (Linux 6.12)", abi, armns.ScopeABI)
	}
	dir, installed := sshtest.ArmExec(t)
	defer func(found func() (string, error)) { armExec = found }(armExec)
	nobody := arm.Identity{Name: "nobody", UID: 65534, GID: 65534}
	setUp := func(exe string) *Isolation {
		armExec = func() (string, error) { return exe, nil }
		newArm := func(name string) *arm.Arm {
			home := filepath.Join(dir, filepath.Base(exe)+"-"+name)
			os.Mkdir(home, 0o700)
			os.Chown(home, int(nobody.UID), int(nobody.GID))
			return &arm.Arm{Name: name, User: nobody, Dedicated: true, Home: home}
		}
		iso := &Isolation{Champion: newArm("champion"), Challenger: newArm("challenger")}
		iso.Info.MaxProcs.By = "RLIMIT_NPROC"
		setUpPrivateMounts(config.Config{}, iso, true)
		return iso
	}

	iso := setUp(installed)
	t.Logf("%s\n%q", iso.Info.PrivateMounts, iso.Info.Notes)
	for _, a := range []*arm.Arm{iso.Champion, iso.Challenger} {
		if a.Private == nil || a.Private.Mounts || !a.Private.ScopeSockets {
			t.Errorf("the arm's programs start %+v, want through arm-exec for the scope alone", a.Private)
		}
	}
	if line := iso.Info.PrivateMounts; !strings.HasPrefix(line, "none: the arms' tasks are bounded by RLIMIT_NPROC") || !strings.Contains(line, "; abstract unix sockets: each program reaches only its own and its children's") {
		t.Errorf("line %q", line)
	}

	iso = setUp(filepath.Join(dir, "missing"))
	t.Logf("%s\n%q", iso.Info.PrivateMounts, iso.Info.Notes)
	if iso.Champion.Private != nil || iso.Challenger.Private != nil {
		t.Errorf("the arms' programs start through an arm-exec that is not there")
	}
	if !strings.HasSuffix(iso.Info.PrivateMounts, "; abstract unix sockets shared with the host and the other arm") || !strings.Contains(strings.Join(iso.Info.Notes, "\n"), "abstract unix sockets: arm-exec cannot scope them (champion: ") {
		t.Errorf("line %q, notes %q", iso.Info.PrivateMounts, iso.Info.Notes)
	}
}
