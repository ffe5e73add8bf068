package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A disk that fills during a run ends the run failed with the cause, never "ok", and the next
// run works once space is back (issue 19: `wait` said ok, result.json was never written, and
// `result` answered "not finished" forever). The host's root is a small tmpfs of its own.
func TestARunOnAFullDiskFailsWithTheCauseAndTheNextOneWorks(t *testing.T) {
	h := newHost(t, hostOptions{})
	if err := os.MkdirAll(h.Root, 0o711); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m", "perf-gate-test", h.Root).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", h.Root).Run() })
	h.setupChampion()
	h.must(bytes.NewReader(buildTarball(t, "fast", "v2", "exec ./service")), "deploy challenger bbbbbbb")

	h.must(strings.NewReader(runPlan("bbbbbbb", 4, 0.5)), "run full-1")
	w := follow(t, h.SSHCommand("wait full-1"), "slice 2/8")
	filler := filepath.Join(h.Root, "filler")
	fill(t, filler) // the disk is full from the third slice on
	progress, err := w.finish()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("wait on a full disk: %v, want exit 1\n%s", err, progress)
	}
	out := h.must(nil, "result full-1")
	r := decodeResult(t, out)
	if r.Outcome.Status != "error" || r.Outcome.ErrorKind != "write_failed" || !strings.Contains(r.Outcome.Message, "no space left on device") {
		t.Errorf("outcome %+v; want a write_failed error naming 'no space left on device'", r.Outcome)
	}
	if strings.Contains(progress, `"status":"ok"`) {
		t.Errorf("something said ok:\n%s", progress)
	}
	t.Logf("full disk: %s: %s", r.Outcome.ErrorKind, r.Outcome.Message)
	temps, _ := filepath.Glob(filepath.Join(h.Root, "runs", "full-1", "*.tmp-*"))
	if len(temps) > 0 {
		t.Errorf("temporary files left behind: %v", temps)
	}

	// Space is back: the next run works, and the host is not locked.
	os.Remove(filler)
	h.must(strings.NewReader(runPlan("bbbbbbb", 2, 0.5)), "run full-2")
	if out := h.must(nil, "wait full-2"); !strings.Contains(out, `"status":"ok"`) {
		t.Errorf("the run after the disk emptied:\n%s", out)
	}
	if r := decodeResult(t, h.must(nil, "result full-2")); len(r.Slices) != 4 {
		t.Errorf("the next run has %d slices", len(r.Slices))
	}
}

// fill writes to path until the file system is full.
func fill(t *testing.T, path string) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			return
		}
	}
}

// A champion that dies during a run is restarted by its supervisor; the slices the restart
// touched are invalid (so the verdict drops their pairs whole) and the result says when and
// why. Before, its slice showed errors but stayed valid, and the run was "ok" with no word.
func TestAChampionRestartMidRunInvalidatesTheSlicesItTouched(t *testing.T) {
	h := newHost(t, hostOptions{})
	h.setupChampion()
	h.must(bytes.NewReader(buildTarball(t, "fast", "v2", "exec ./service")), "deploy challenger bbbbbbb")
	h.must(strings.NewReader(runPlan("bbbbbbb", 5, 0.5)), "run restart-1")
	w := follow(t, h.SSHCommand("wait restart-1"), "slice 3/10")
	var rec struct {
		ChampionPid int `json:"champion_pid"`
	}
	b, _ := os.ReadFile(filepath.Join(h.Root, "champion.json"))
	if json.Unmarshal(b, &rec) != nil || syscall.Kill(rec.ChampionPid, syscall.SIGKILL) != nil {
		t.Fatalf("no champion to kill: %s", b)
	}
	w.finish()
	r := decodeResult(t, h.must(nil, "result restart-1"))
	if r.Outcome.Status != "ok" || len(r.ChampionRestarts) == 0 || r.ChampionRestarts[0].Event != "exited" || !strings.Contains(r.ChampionRestarts[0].Detail, "killed") {
		t.Fatalf("outcome %+v, champion restarts %+v; want ok with the exit named", r.Outcome, r.ChampionRestarts)
	}
	invalid := 0
	for _, s := range r.Slices {
		if !s.Valid {
			invalid++
			if !strings.Contains(s.InvalidReason, "champion restart") {
				t.Errorf("slice %d is invalid for another reason: %s", s.Index, s.InvalidReason)
			}
		}
		t.Logf("slice %d %-10s valid %-5v errors %d %s", s.Index, s.Arm, s.Valid, s.Errors.Total(), s.InvalidReason)
	}
	// Every champion slice with failed requests is among the invalid ones.
	for _, s := range r.Slices {
		if s.Arm == "champion" && s.Errors.Total() > 0 && s.Valid {
			t.Errorf("champion slice %d had %d errors but stayed valid", s.Index, s.Errors.Total())
		}
	}
	if invalid == 0 || invalid > 6 {
		t.Errorf("%d slices invalid; want the few the restart touched", invalid)
	}
}
