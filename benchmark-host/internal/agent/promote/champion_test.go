package promote_test

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/config"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/detached"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/store"
)

// The test binary is also the host's detached champion supervisor (perf-host champion-daemon)
// and the service the releases start (serve: answers on $PORT), so that these tests run a
// local-mode host as `perf-gate run --local` does, without building perf-host.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "champion-daemon":
			os.Exit(championDaemon(os.Args[2:]))
		case "serve":
			http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
			fmt.Fprintln(os.Stderr, http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), nil))
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// championDaemon is perf-host's champion-daemon verb.
func championDaemon(args []string) int {
	fs := flag.NewFlagSet("champion-daemon", flag.ContinueOnError)
	cfg := config.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	h, err := newHost(*cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	signal.Ignore(syscall.SIGHUP)
	if err := h.Supervisor.Daemon(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// newHost is perf-host's host on cfg, with this test binary as perf-host.
func newHost(cfg config.Config) (*agent.Host, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return agent.New(cfg, exe)
}

// newLocalHost is a local-mode host (both arms as this user, no cgroup, no packet filter) on
// two free ports, with release "aaaaaaa" deployed; its supervisor is stopped at the end.
func newLocalHost(t *testing.T) *agent.Host {
	t.Helper()
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	fs := flag.NewFlagSet("perf-host", flag.ContinueOnError)
	cfg := config.BindFlags(fs)
	if err := fs.Parse([]string{"--root", root, "--service-user", me.Username, "--net-table", "", "--lock-wait", "1s",
		"--champion-port", strconv.Itoa(freePort(t)), "--challenger-port", strconv.Itoa(freePort(t))}); err != nil {
		t.Fatal(err)
	}
	h, err := newHost(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range daemons(root) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if t.Failed() {
			log, _ := os.ReadFile(h.Store.Path("logs", "champion-daemon.log"))
			t.Logf("champion-daemon.log:\n%s", log)
		}
	})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	release := h.Store.ReleaseDir("aaaaaaa")
	if err := os.MkdirAll(release, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(release, "start.sh"), []byte("#!/bin/sh\nexec "+exe+" serve\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return h
}

var testSpec = contract.ServiceSpec{Command: []string{"./start.sh"}, HealthPath: "/health", HealthTimeoutSeconds: 5}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// takePort is another process's listener on the port (this test's own), until closed.
func takePort(t *testing.T, port int) net.Listener {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			t.Cleanup(func() { l.Close() })
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("cannot take port %d: %v", port, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// daemons are the champion supervisors of root that run, found by their command line
// whether or not they recorded themselves.
func daemons(root string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 1 && args[1] == "champion-daemon" && strings.Contains(string(cmdline), "\x00--root\x00"+root+"\x00") && detached.Alive(pid, "champion-daemon") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// championPid is the champion's pid in the supervisor's record; 0 when none is recorded.
func championPid(h *agent.Host) int {
	var rec struct {
		ChampionPid int `json:"champion_pid"`
	}
	store.ReadJSON(h.Store.Path("champion.json"), &rec)
	return rec.ChampionPid
}

// answers reports whether the port answers the health check.
func answers(port int) bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/health", port))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// checkPortTaken checks that err says, at once, that the champion port is in use and by whom.
func checkPortTaken(t *testing.T, what string, err error, took time.Duration, port int) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s on a champion port another process holds succeeded", what)
	}
	msg := err.Error()
	for _, want := range []string{fmt.Sprintf("port %d (PORT) is already in use by another process", port), fmt.Sprintf("pid %d", os.Getpid())} {
		if !strings.Contains(msg, want) {
			t.Errorf("%s: the error does not say %q:\n%s", what, want, msg)
		}
	}
	for _, bogus := range []string{"(no log:", "did not start"} {
		if strings.Contains(msg, bogus) {
			t.Errorf("%s: the error says %q:\n%s", what, bogus, msg)
		}
	}
	if took > 20*time.Second {
		t.Errorf("%s failed after %v; want at once", what, took)
	}
}

// A first promotion whose champion port another process holds fails at once, naming the port
// and its holder; it leaves no champion, and no supervisor behind retrying. Once the port is
// free, the same promotion succeeds.
func TestAFirstPromotionOnATakenChampionPortFailsAtOnceAndLeavesNoSupervisor(t *testing.T) {
	h := newLocalHost(t)
	stranger := takePort(t, h.Config.ChampionPort)
	spec := testSpec
	start := time.Now()
	_, err := h.Champions.Promote(context.Background(), "aaaaaaa", &spec, 0)
	checkPortTaken(t, "the promotion", err, time.Since(start), h.Config.ChampionPort)
	if left := daemons(h.Config.Root); len(left) > 0 {
		t.Errorf("the failed promotion left champion supervisors %v behind", left)
	}
	if st, err := h.Store.LoadState(); err != nil || st.Champion != "" {
		t.Errorf("after the failed first promotion the champion is %q (%v); want none", st.Champion, err)
	}

	stranger.Close()
	if said, err := h.Champions.Promote(context.Background(), "aaaaaaa", &spec, 0); err != nil {
		t.Fatalf("the promotion once the port is free: %v", err)
	} else if !strings.Contains(said, "champion is now aaaaaaa") {
		t.Errorf("the promotion once the port is free said %q", said)
	}
	if !answers(h.Config.ChampionPort) {
		t.Errorf("the champion does not answer on :%d", h.Config.ChampionPort)
	}
}

// A supervisor that cannot start its champion, the port held by another process, is a
// supervisor all the same: it says why at once, stop finds and stops it. A champion that
// crashes is still restarted, once its port is free again.
func TestASupervisorRetryingATakenPortIsStoppedAndStillRestartsACrashedChampion(t *testing.T) {
	h := newLocalHost(t)
	ctx := context.Background()
	spec := testSpec
	if _, err := h.Champions.Promote(ctx, "aaaaaaa", &spec, 0); err != nil {
		t.Fatal(err)
	}
	// `perf-gate run --local` stops the supervisor it started when it ends; the next one
	// starts it again, here on a port another process took meanwhile.
	if said, err := h.Supervisor.Stop(); err != nil || !strings.HasPrefix(said, "stopped the champion supervisor") {
		t.Fatalf("stop: %q %v", said, err)
	}
	stranger := takePort(t, h.Config.ChampionPort)
	start := time.Now()
	_, err := h.Champions.Promote(ctx, "aaaaaaa", nil, 0)
	checkPortTaken(t, "the promotion of the champion", err, time.Since(start), h.Config.ChampionPort)
	if !h.Supervisor.Supervised() {
		t.Errorf("a supervisor retrying its champion is not seen as running (%v run)", daemons(h.Config.Root))
	}
	said, err := h.Supervisor.Stop()
	if err != nil || !strings.HasPrefix(said, "stopped the champion supervisor (pid ") {
		t.Errorf("stop of a supervisor retrying its champion: %q %v", said, err)
	}
	if left := daemons(h.Config.Root); len(left) > 0 {
		t.Errorf("after stop, champion supervisors %v still run", left)
	}

	// The port free again: the champion serves; killed, and its port held for a moment, it
	// is restarted once the port is free.
	stranger.Close()
	if _, err := h.Champions.Promote(ctx, "aaaaaaa", nil, 0); err != nil {
		t.Fatalf("the champion once its port is free: %v", err)
	}
	crashed := championPid(h)
	if crashed == 0 || syscall.Kill(crashed, syscall.SIGKILL) != nil {
		t.Fatalf("no champion to kill (pid %d)", crashed)
	}
	stranger = takePort(t, h.Config.ChampionPort)
	time.Sleep(1500 * time.Millisecond) // the supervisor's first retry finds it taken
	stranger.Close()
	deadline := time.Now().Add(20 * time.Second)
	for !answers(h.Config.ChampionPort) || championPid(h) == crashed || championPid(h) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the crashed champion (pid %d) was not restarted once its port was free; champion.json names pid %d", crashed, championPid(h))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A refused promotion quotes the log of its own try: the candidate's log is not one that every
// earlier try of the same build added to.
func TestARefusedPromotionQuotesItsOwnTryOnly(t *testing.T) {
	h := newLocalHost(t)
	release := h.Store.ReleaseDir("bbbbbbb")
	if err := os.MkdirAll(release, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(release, "start.sh"), []byte("#!/bin/sh\necho this try fails\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for try := 1; try <= 2; try++ {
		_, err := h.Champions.Promote(context.Background(), "bbbbbbb", &testSpec, 0)
		if err == nil {
			t.Fatalf("try %d: a build that exits at once was promoted", try)
		}
		if n := strings.Count(err.Error(), "this try fails"); n != 1 {
			t.Errorf("try %d: the refusal quotes %d tries' lines, want 1:\n%v", try, n, err)
		}
	}
}
