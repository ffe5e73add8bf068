package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A disk that fills during a run ends the run failed with the cause, never "ok", and the next
// run works once space is back (docs/design/0017-host-faults.md: `wait` said ok, result.json was
// never written, and `result` answered "not finished" forever). The host's root is a small tmpfs of
// its own.
func TestARunOnAFullDiskFailsWithTheCauseAndTheNextOneWorks(t *testing.T) {
	t.Parallel()
	h := newHost(t, hostOptions{})
	if err := os.MkdirAll(h.Root, 0o711); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m", "perf-gate-test", h.Root).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", h.Root).Run() })
	h.setupChampion()
	h.deployChallenger()

	w := h.followRun("full-1", 4, "slice 2/8")
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

// The champion of a run is the run's own (symmetric start): one that dies mid-run ends the run
// as champion_crashed with its log tail, as a challenger's crash does, and the supervisor serves
// the champion port again before the run reports. (Before symmetric starts the supervisor restarted
// the champion under the run, cold, while the challenger stayed warm.)
func TestAChampionThatDiesMidRunFailsTheRunAndTheChampionServesAgain(t *testing.T) {
	t.Parallel()
	h := newHost(t, hostOptions{})
	h.setupChampion()
	h.deployChallenger()
	w := h.followRun("crash-1", 5, "slice 3/10")
	pid := armPid(t, w.out.String(), "champion")
	syscall.Kill(pid, syscall.SIGKILL)
	progress, err := w.finish()
	if v := version(h.ChampionPort); v != "fast v1" {
		t.Errorf("when wait returned, the champion port answered %q", v)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("wait: %v, want exit 1", err)
	}
	r := decodeResult(t, h.must(nil, "result crash-1"))
	if r.Outcome.ErrorKind != "champion_crashed" || !strings.Contains(r.Outcome.Message, "killed") || !strings.Contains(r.Outcome.Message, "its log ends") {
		t.Errorf("outcome %+v; want champion_crashed naming the signal, with the log tail", r.Outcome)
	}
	if v := version(h.ChallengerPort); !strings.HasPrefix(v, "down") {
		t.Errorf("the challenger still answers: %s", v)
	}
	for _, want := range []string{"both arms stopped", "the champion serves on :"} {
		if !strings.Contains(progress, want) {
			t.Errorf("the progress lacks %q:\n%s", want, progress)
		}
	}
}

// A run's process that dies holding the champion port (killed, a crash) leaves nothing dead:
// the supervisor sees the lease outlive it, clears both arms and serves the champion again
// within about a second. A supervisor killed during a run is started again when the run ends.
func TestARunOrSupervisorThatDiesNeverLeavesTheChampionPortDead(t *testing.T) {
	t.Parallel()
	h := newHost(t, hostOptions{})
	h.setupChampion()
	h.deployChallenger()

	w := h.followRun("die-1", 5, "slice 2/10")
	executor := readPid(t, filepath.Join(h.Root, "runs", "die-1", "pid"))
	p := startPoller(h.ChampionPort)
	killedAt := time.Now()
	syscall.Kill(executor, syscall.SIGKILL)
	progress, _ := w.finish()
	for !strings.HasPrefix(version(h.ChampionPort), "fast") && time.Since(killedAt) < 10*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	back := time.Since(killedAt)
	p.finish()
	t.Logf("the run's executor killed: the champion port served again after %v", back.Round(time.Millisecond))
	if back > 5*time.Second {
		t.Errorf("the champion port was dead for %v after the run died", back)
	}
	if !strings.Contains(progress, "executor_died") {
		t.Errorf("wait did not report the run's death:\n%s", progress)
	}
	for !strings.HasPrefix(version(h.ChallengerPort), "down") && time.Since(killedAt) < 10*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	if v := version(h.ChallengerPort); !strings.HasPrefix(v, "down") {
		t.Errorf("the dead run's challenger still answers: %s", v)
	}
	events, _ := os.ReadFile(filepath.Join(h.Root, "champion-events.jsonl"))
	if !strings.Contains(string(events), "run die-1 died holding the champion port") {
		t.Errorf("the supervisor's events do not say it took the port back:\n%s", events)
	}

	// The supervisor killed mid-run: the run ends ok, and a new supervisor serves after it.
	w = h.followRun("die-2", 3, "slice 2/6")
	var rec struct{ Pid int }
	b, _ := os.ReadFile(filepath.Join(h.Root, "champion.json"))
	if json.Unmarshal(b, &rec) != nil || syscall.Kill(rec.Pid, syscall.SIGKILL) != nil {
		t.Fatalf("no supervisor to kill: %s", b)
	}
	progress, err := w.finish()
	if err != nil || !strings.Contains(progress, `"status":"ok"`) {
		t.Errorf("the run whose supervisor died: %v\n%s", err, progress)
	}
	if v := version(h.ChampionPort); v != "fast v1" {
		t.Errorf("after the run the champion port answers %q", v)
	}
}

// armPid reads an arm's service pid from the run's progress ("champion aaaaaaa healthy on :N
// after S s (pid P)").
func armPid(t *testing.T, progress, name string) int {
	t.Helper()
	m := regexp.MustCompile(name + ` \w+ healthy on :\d+ after [\d.]+ s \(pid (\d+)\)`).FindStringSubmatch(progress)
	if m == nil {
		t.Fatalf("no %s pid in the progress:\n%s", name, progress)
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		t.Fatalf("%s: %v %q", path, err, b)
	}
	return pid
}
