package profile

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/cgroup"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/sshtest"
)

// testArm is the example service, built into a release directory, running in a cgroup of its own.
type testArm struct {
	Arm
	port int
	cmd  *exec.Cmd
}

// cpuUs is the CPU the arm's cgroup has used so far.
func (a *testArm) cpuUs(t *testing.T) uint64 {
	us, err := cgroup.CPUUsageUs(filepath.Join(cgroup.Mount(), a.Cgroup))
	if err != nil {
		t.Fatal(err)
	}
	return us
}

// startArm builds the example service with tags into its own release and work copy (the work
// copy is what runs, as on a host; the release is what the profile names frames from) and
// starts it in a fresh cgroup under the v2 mount.
func startArm(t *testing.T, name, tags string, port int) *testArm {
	t.Helper()
	root := t.TempDir()
	release, work := filepath.Join(root, "release"), filepath.Join(root, "work")
	build := exec.Command("go", "build", "-trimpath", "-tags", tags, "-o", filepath.Join(release, "bin", "service"), "../../examples/service")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", name, err, out)
	}
	if out, err := exec.Command("cp", "-a", release, work).CombinedOutput(); err != nil {
		t.Fatalf("copy: %v %s", err, out)
	}
	rel := fmt.Sprintf("perf-gate-profile-test-%d-%s", os.Getpid(), name)
	dir := filepath.Join(cgroup.Mount(), rel)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("cgroup: %v", err)
	}
	fd, err := syscall.Open(dir, syscall.O_DIRECTORY|syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	a := &testArm{Arm: Arm{Name: name, Cgroup: rel, Work: work, Release: release}, port: port}
	a.cmd = exec.Command(filepath.Join(work, "bin", "service"))
	a.cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	a.cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.cmd.Process.Kill()
		a.cmd.Wait()
		os.Remove(dir)
	})
	for range 100 {
		if r, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", port)); err == nil {
			r.Body.Close()
			return a
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not answer on :%d", name, port)
	return nil
}

func needPerf(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: perf record -a on cgroups, and cgroups of the test's own")
	}
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("no perf (Debian's linux-perf)")
	}
	if cgroup.Mount() == "" {
		t.Skip("no cgroup v2 mount")
	}
}

// Both arms are sampled the same way, each in its own slices; each profile holds only its
// arm's samples from its own slices, named by function (the example service's own functions
// by name, from the release), and the function a change made slower is in the challenger's
// profile, not the champion's; the per-slice counts add up to the profile's samples;
// go tool pprof -diff_base reads the pair.
func TestBothArmsAreSampledInTheirOwnSlicesAndNamedByFunction(t *testing.T) {
	needPerf(t)
	champion := startArm(t, "champion", "", sshtest.FreePort(t))
	challenger := startArm(t, "challenger", "slowreport", sshtest.FreePort(t))
	dir := t.TempDir()
	s, err := Start(Config{Dir: dir, Arms: []Arm{champion.Arm, challenger.Arm}})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	// Eight alternating windows: each arm loaded in its own (one in ten requests a report) until
	// it has used 100 ms of CPU, about 50 samples at 499 Hz. A window of a fixed length would
	// hold too few samples on a machine whose other work leaves the arm little CPU: what this
	// test checks is where the samples go, not how many a busy machine allows.
	var windows []Window
	for i := range 8 {
		a := []*testArm{champion, challenger}[i%2]
		w := Window{Index: i, Arm: a.Name, Start: time.Now()}
		used := a.cpuUs(t)
		for n := 0; a.cpuUs(t)-used < 100_000 && time.Since(w.Start) < 20*time.Second; n++ {
			path := "/work"
			if n%10 == 0 {
				path = "/report"
			}
			if r, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s?key=%d", a.port, path, n)); err == nil {
				r.Body.Close()
			}
		}
		w.End = time.Now()
		windows = append(windows, w)
	}
	cpu := s.CPU()
	if err := s.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	p, err := s.Build(windows, dir)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	if p.CPUSeconds < cpu.Seconds() || p.CPUSeconds <= 0 {
		t.Errorf("perf's CPU over the run reads %.3f s, after %v while it ran", p.CPUSeconds, cpu)
	}
	t.Logf("perf's own CPU %v; %d functions; files %+v", cpu, len(p.Functions), p.Arms)
	read := func(arm string) *profile.Profile {
		f, err := os.Open(filepath.Join(dir, arm+".pb.gz"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		prof, err := profile.Parse(f)
		if err != nil {
			t.Fatalf("%s.pb.gz: %v", arm, err)
		}
		return prof
	}
	samplesIn := func(prof *profile.Profile, fn string) (n int64) {
		for _, s := range prof.Sample {
			for _, l := range s.Location {
				if l.Line[0].Function.Name == fn {
					n += s.Value[0]
					break
				}
			}
		}
		return n
	}
	champ, chall := read("champion"), read("challenger")
	for arm, prof := range map[string]*profile.Profile{"champion": champ, "challenger": chall} {
		var total int64
		for _, s := range prof.Sample {
			total += s.Value[0]
		}
		if total != p.Arms[arm].Samples || total < 50 {
			t.Errorf("%s: the profile holds %d samples, the result says %d (want at least 50)", arm, total, p.Arms[arm].Samples)
		}
		if samplesIn(prof, "net/http.(*conn).serve") == 0 {
			t.Errorf("%s: no sample under net/http.(*conn).serve: the service's frames are not named", arm)
		}
	}
	if n := samplesIn(chall, "main.summarizeReport"); n < 10 {
		t.Errorf("challenger: %d samples in main.summarizeReport, the function the change made slower", n)
	}
	if n := samplesIn(champ, "main.summarizeReport"); n > 2 {
		t.Errorf("champion: %d samples in main.summarizeReport, which does nothing in its build", n)
	}
	// Per slice: only the measured arm's samples, adding up to each profile.
	var perArm = map[string]int64{}
	for _, ps := range p.Slices {
		perArm[windows[ps.Index].Arm] += ps.Samples
	}
	if perArm["champion"] != p.Arms["champion"].Samples || perArm["challenger"] != p.Arms["challenger"].Samples {
		t.Errorf("slices add up to %v, the profiles hold champion %d challenger %d", perArm, p.Arms["champion"].Samples, p.Arms["challenger"].Samples)
	}
	idx := -1
	for i, f := range p.Functions {
		if f == "main.summarizeReport" {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("main.summarizeReport is not among the counted functions %v", p.Functions)
	}
	callers := []string{}
	for _, c := range p.Callers[idx] {
		callers = append(callers, p.Functions[c])
	}
	if !strings.Contains(strings.Join(callers, " "), "net/http.(*conn).serve") {
		t.Errorf("main.summarizeReport's callers %v lack net/http.(*conn).serve", callers)
	}
	if _, err := exec.LookPath("go"); err == nil {
		out, err := exec.Command("go", "tool", "pprof", "-top", "-diff_base", filepath.Join(dir, "champion.pb.gz"), filepath.Join(dir, "challenger.pb.gz")).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "main.summarizeReport") {
			t.Errorf("go tool pprof -diff_base: %v\n%s", err, out)
		}
	}
}

// Without perf, or without a cgroup per arm, a run goes on and its result says why there are
// no profiles; a profile is read by arm, never by path.
func TestARunWithoutProfilesSaysWhy(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Perf: "/nonexistent/perf", Dir: dir, Arms: []Arm{{Name: "champion", Cgroup: "x"}}}, "no perf on this host"},
		{Config{Dir: dir, Arms: []Arm{{Name: "champion", Cgroup: "x"}, {Name: "challenger"}}}, "the challenger has no cgroup of its own"},
	} {
		p := StartRun(c.cfg).Finish(nil, dir)
		if p.Status != contract.ProfilesNotAvailable || !strings.Contains(p.Reason, c.want) {
			t.Errorf("got %+v, want not_available saying %q", p, c.want)
		}
	}
	for _, arm := range []string{"../champion", "champion.pb.gz", "/etc/shadow", "loadgen"} {
		if _, err := Read(dir, arm); err == nil || !strings.Contains(err.Error(), "no arm") {
			t.Errorf("Read(%q): %v, want refused", arm, err)
		}
	}
	if _, err := Read(dir, "challenger"); err == nil || !strings.Contains(err.Error(), "has no challenger profile") {
		t.Errorf("a missing profile: %v", err)
	}
}
