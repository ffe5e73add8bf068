package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// `status` is what every client asks of a host, a busy one too (the pool's probe of each host,
// the wait for a free one), so it must start nothing in the arms: a run may be clearing,
// starting or measuring them. It once checked the arms' private mounts by starting /bin/true
// through arm-exec in each arm; in a pool, one such start landed in the challenger's cgroup
// while a run was clearing it, and the run failed as challenger_unhealthy ("still running after
// SIGKILL: … arm-exec"). A run's own preflight, under the host lock, still checks arm-exec by
// starting a program through it (docs/design/0032-status-starts-nothing-in-the-arms.md).
func TestStatusStartsNothingInTheArms(t *testing.T) {
	t.Parallel()
	h := crossArmHost(t)
	started := countArmExecStarts(t, h)

	var st contract.Status
	for range 3 {
		if err := json.Unmarshal([]byte(h.must(nil, "status")), &st); err != nil {
			t.Fatal(err)
		}
	}
	if n := started(); n != 0 {
		t.Errorf("status started %d programs in the arms through arm-exec", n)
	}
	if !strings.HasPrefix(st.Isolation.PrivateMounts, "arm-exec:") {
		t.Errorf("status no longer says the arms' programs get mounts of their own: %q", st.Isolation.PrivateMounts)
	}
	// install.sh's report is `perf-host isolation`'s, checked by starting a program in each arm.
	if !strings.Contains(h.installOutput, `"private_mounts": "arm-exec: each arm's programs`) || strings.Contains(h.installOutput, "(installed;") {
		t.Errorf("install.sh did not report arm-exec as checked:\n%s", h.installOutput)
	}

	c := h.crossArmRun(t, "plain", "exec ./service", 2)
	if c.r.Outcome.Status != contract.StatusOK {
		t.Fatalf("outcome %+v\n%s", c.r.Outcome, c.progress)
	}
	if started() == 0 {
		t.Fatal("the run started nothing through the watched arm-exec: the test proves nothing")
	}
	if f := finding(c.r.Preflight, "arm_private_mounts"); !strings.HasPrefix(f.Detail, "arm-exec: each arm's programs") {
		t.Errorf("the run's preflight did not check arm-exec: %+v", f)
	}
}

// countArmExecStarts puts a script in front of the host's arm-exec that counts its starts, and
// returns how many there have been since.
func countArmExecStarts(t *testing.T, h *installedHost) func() int {
	t.Helper()
	dir, err := os.MkdirTemp("", "perf-gate-arm-exec-starts-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The arms' users write it (arm-exec runs as theirs, not yet in its own mounts).
	log := filepath.Join(dir, "starts")
	if err := os.WriteFile(log, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{os.Chmod(dir, 0o755), os.Chmod(log, 0o666)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(h.prefix, "arm-exec")
	if err := os.Rename(exe, exe+".watched"); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho \"$*\" >> " + log + "\nexec " + exe + ".watched \"$@\"\n"
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return func() int {
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "\n")
	}
}
