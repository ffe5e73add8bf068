package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/sshtest"
)

// The service of these tests: it needs the fixture its setup writes into STATE_DIR, records
// that it served in STATE_DIR, and logs its arguments and ports.
const statefulStart = `echo "args $* PORT=$PORT PORT_ADMIN=$PORT_ADMIN STATE_DIR=$STATE_DIR HOME=$HOME"
test -f "$STATE_DIR/fixture" || { echo "no fixture in $STATE_DIR" >&2; exit 7; }
echo served >> "$STATE_DIR/served"
exec ./service`

func statefulSpec(state, setup string) string {
	return fmt.Sprintf(`{"command":["./start.sh","--admin=127.0.0.1:$PORT_ADMIN","$HOME"],"ports":["admin"],"state":%q,
"setup":["/bin/sh","-c",%q],"setup_timeout_seconds":%g,"health_timeout_seconds":5}`, state, setup, 0.5)
}

const goodSetup = `echo "setup as $(id -u) found: $(ls "$STATE_DIR" | tr '\n' ' ')"; echo row > "$STATE_DIR/fixture"`

func statefulPlan(challenger, spec string) string {
	return fmt.Sprintf(`{"challenger_sha":%q,"service":%s,"loadgen":{"workload":"work","rate":100,"slice_seconds":0.4,"pairs":2,"seed":1,"warmup_seconds":0.2,"connections":2,"requests":[{"path":"/work"}]}}`, challenger, spec)
}

// Every run starts both arms the same way (docs/design/0013-symmetric-starts.md): a fresh copy of
// each build, an empty STATE_DIR (unless the state is persistent), service.setup as the arm's user
// with its time and output in the run log, $PORT and the extra ports of service.ports expanded in
// the argv, each arm's from the host's --service-ports range and never the same as the other's.
func TestEveryRunStartsBothArmsFreshWithTheirOwnPortsStateAndSetup(t *testing.T) {
	t.Parallel()
	lo := sshtest.FreePort(t)
	h := newHost(t, hostOptions{extraFlags: []string{"--service-ports", fmt.Sprintf("%d-%d", lo, lo+40)}})
	release := buildTarball(t, "fast", "v1", statefulStart)
	h.must(bytes.NewReader(release), "deploy champion aaaaaaa")
	h.must(strings.NewReader(statefulSpec("fresh", goodSetup)), "promote aaaaaaa")
	h.must(bytes.NewReader(release), "deploy challenger bbbbbbb")

	var seen []contract.HostResult
	for i, state := range []string{"fresh", "fresh", "persistent"} {
		if state == "persistent" { // a new champion with the persistent spec (its arm keeps STATE_DIR)
			h.must(bytes.NewReader(release), "deploy champion ccccccc")
			h.must(strings.NewReader(statefulSpec(state, goodSetup)), "promote ccccccc")
		}
		id := fmt.Sprintf("sym-%d", i)
		h.must(strings.NewReader(statefulPlan("bbbbbbb", statefulSpec(state, goodSetup))), "run "+id)
		progress := h.must(nil, "wait "+id)
		r := decodeResult(t, h.must(nil, "result "+id))
		if r.Outcome.Status != "ok" {
			t.Fatalf("run %s: %+v\n%s", id, r.Outcome, progress)
		}
		seen = append(seen, r)
		for _, arm := range []string{"champion", "challenger"} {
			a := r.Arms[arm]
			for _, want := range []string{
				arm + " setup: done in",
				fmt.Sprintf("setup as %d found: ", 65534), // nobody: the arms' user in these tests
				fmt.Sprintf("%s %s: a fresh copy in %s", arm, a.SHA, filepath.Join(h.Root, "arms", arm, "work")),
				fmt.Sprintf("PORT_ADMIN=%d", a.Ports["PORT_ADMIN"]),
			} {
				if !strings.Contains(progress, want) {
					t.Errorf("run %s: the progress lacks %q:\n%s", id, want, progress)
				}
			}
			if a.SetupSeconds == nil || a.StateBytes == nil || *a.StateBytes == 0 || a.State != state || a.StateDir != filepath.Join(h.Root, "arms", arm, "state") {
				t.Errorf("run %s, %s: %+v", id, arm, a)
			}
			if p := a.Ports["PORT_ADMIN"]; p < lo || p > lo+40 || p == a.Ports["PORT"] {
				t.Errorf("run %s, %s: PORT_ADMIN %d outside --service-ports %d-%d", id, arm, p, lo, lo+40)
			}
			// The argv was expanded ($PORT_ADMIN) and passed as is where nothing expands ($HOME).
			log, _ := os.ReadFile(filepath.Join(h.Root, "runs", id, arm+".log"))
			want := fmt.Sprintf("args --admin=127.0.0.1:%d $HOME PORT=%d PORT_ADMIN=%d STATE_DIR=%s HOME=%s", a.Ports["PORT_ADMIN"], a.Ports["PORT"], a.Ports["PORT_ADMIN"], a.StateDir, filepath.Join(h.Root, "arms", arm, "work"))
			if !strings.Contains(string(log), want) {
				t.Errorf("run %s: the %s's log lacks %q:\n%s", id, arm, want, log)
			}
		}
		if c, ch := r.Arms["champion"].Ports["PORT_ADMIN"], r.Arms["challenger"].Ports["PORT_ADMIN"]; c == ch {
			t.Errorf("run %s: both arms got PORT_ADMIN %d", id, c)
		}
		// Fresh: each arm's setup finds STATE_DIR empty. Persistent: it finds what the arm's
		// last start left (the fixture, and that it served).
		found := regexp.MustCompile(`setup as \d+ found: (.*)`).FindAllStringSubmatch(progress, -1)
		for _, f := range found {
			if empty := strings.TrimSpace(f[1]) == ""; empty != (state == "fresh") {
				t.Errorf("run %s (%s): a setup found %q in STATE_DIR", id, state, f[1])
			}
		}
	}
	// Fresh state does not grow from run to run, and both arms leave the same.
	if a, b := *seen[0].Arms["champion"].StateBytes, *seen[1].Arms["champion"].StateBytes; a != b {
		t.Errorf("the champion's STATE_DIR: %d bytes after the first run, %d after the second", a, b)
	}
}

// A failing or hanging setup is its arm's failure, with the log tail; the champion serves after.
func TestASetupThatFailsOrHangsFailsItsArm(t *testing.T) {
	t.Parallel()
	h := newHost(t, hostOptions{})
	release := buildTarball(t, "fast", "v1", statefulStart)
	h.must(bytes.NewReader(release), "deploy champion aaaaaaa")
	h.must(strings.NewReader(statefulSpec("fresh", goodSetup)), "promote aaaaaaa")
	// Both arms run the run's spec: the challenger's build is the one whose setup fails.
	h.must(bytes.NewReader(buildTarball(t, "fast", "broken", statefulStart)), "deploy challenger bbbbbbb")
	for i, c := range []struct{ setup, want string }{
		{`grep -q broken VERSION && { echo "cannot reach the fixture bucket" >&2; exit 3; }; ` + goodSetup, "challenger bbbbbbb setup failed after"},
		{`grep -q broken VERSION && sleep 30; ` + goodSetup, "did not finish within service.setup_timeout_seconds 0.5 and was stopped"},
	} {
		id := fmt.Sprintf("setup-%d", i)
		h.must(strings.NewReader(statefulPlan("bbbbbbb", statefulSpec("fresh", c.setup))), "run "+id)
		_, _, code := h.ssh(nil, "wait "+id)
		var out contract.Outcome
		json.Unmarshal([]byte(h.must(nil, "result "+id)), &struct{ Outcome *contract.Outcome }{&out})
		t.Logf("%s: %s", out.ErrorKind, strings.ReplaceAll(out.Message, "\n", " | "))
		if code != 1 || out.ErrorKind != "challenger_unhealthy" || !strings.Contains(out.Message, c.want) || !strings.Contains(out.Message, "its log ends") {
			t.Errorf("wait exit %d, outcome %+v; want challenger_unhealthy saying %q with the log tail", code, out, c.want)
		}
		if i == 0 && !strings.Contains(out.Message, "cannot reach the fixture bucket") {
			t.Errorf("the setup's output is not in the failure: %s", out.Message)
		}
		if v := version(h.ChampionPort); v != "fast v1" {
			t.Errorf("after the failed setup the champion port answers %q", v)
		}
	}
}

// perf-host stop is local only: the forced command refuses it, and the champion serves on; on
// the host itself it stops the supervisor and the champion.
func TestStopIsLocalOnly(t *testing.T) {
	t.Parallel()
	h := newHost(t, hostOptions{})
	h.setupChampion()
	_, stderr, code := h.ssh(nil, "stop")
	if code != 2 || !strings.Contains(stderr, `unknown verb "stop"`) {
		t.Errorf("stop over ssh: exit %d, %q; want a refusal", code, stderr)
	}
	if v := version(h.ChampionPort); v != "fast v1" {
		t.Errorf("after a refused stop the champion answers %q", v)
	}
	flags := []string{"--root", h.Root, "--service-user", "nobody", "--champion-port", strconv.Itoa(h.ChampionPort), "--challenger-port", strconv.Itoa(h.ChallengerPort), "--cgroup", h.Cgroup}
	out, err := exec.Command(filepath.Join(binaries(t), "perf-host"), append([]string{"stop"}, flags...)...).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "stopped the champion supervisor") {
		t.Fatalf("local stop: %v %s", err, out)
	}
	if v := version(h.ChampionPort); !strings.HasPrefix(v, "down") {
		t.Errorf("after stop the champion answers %q", v)
	}
	var st contract.Status
	json.Unmarshal([]byte(h.must(nil, "status")), &st)
	if st.ChampionSupervised {
		t.Errorf("status still says the champion is supervised")
	}
}

// A challenger's port another process holds is the host's state, not the build's failure: the
// run fails as preflight, naming the port and its holder, and the champion serves after.
func TestATakenChallengerPortIsTheHostsFailureNotTheBuilds(t *testing.T) {
	t.Parallel()
	h := newHost(t, hostOptions{})
	h.must(bytes.NewReader(buildTarball(t, "fast", "v1", statefulStart)), "deploy champion aaaaaaa")
	h.must(strings.NewReader(statefulSpec("fresh", goodSetup)), "promote aaaaaaa")
	h.must(bytes.NewReader(buildTarball(t, "fast", "v2", statefulStart)), "deploy challenger bbbbbbb")
	stranger, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", h.ChallengerPort))
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	h.must(strings.NewReader(statefulPlan("bbbbbbb", statefulSpec("fresh", goodSetup))), "run taken")
	_, _, code := h.ssh(nil, "wait taken")
	var out contract.Outcome
	json.Unmarshal([]byte(h.must(nil, "result taken")), &struct{ Outcome *contract.Outcome }{&out})
	want := fmt.Sprintf("port %d (PORT) is already in use by another process (held by pid %d (", h.ChallengerPort, os.Getpid())
	if code != 1 || out.ErrorKind != "preflight" || !strings.Contains(out.Message, want) {
		t.Errorf("wait exit %d, outcome %+v; want preflight saying %q", code, out, want)
	}
	if v := version(h.ChampionPort); v != "fast v1" {
		t.Errorf("after the run the champion port answers %q", v)
	}
}
