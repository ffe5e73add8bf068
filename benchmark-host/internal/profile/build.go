package profile

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// Window is one measured slice: the arm it measured and its span, as the result records it.
type Window struct {
	Index      int
	Arm        string
	Start, End time.Time
}

// WindowsOf are the measured slices of a result.
func WindowsOf(slices []contract.Slice) []Window {
	out := make([]Window, 0, len(slices))
	for _, s := range slices {
		out = append(out, Window{Index: s.Index, Arm: s.Arm, Start: s.Start, End: s.End})
	}
	return out
}

// Limits on what a profile keeps.
const (
	// A function is counted per slice when either arm spent at least this share of its samples
	// in it (anywhere on the stack), at most maxFunctions of them, the largest first.
	minShare     = 0.005
	maxFunctions = 300
	// A caller is "always" above a function when it is above it in this share of its samples.
	alwaysAbove = 0.99
	// The deepest stack kept, leaf first; perf's own limit is 127.
	maxDepth = 127
)

// sample is one stack sample, its frames named, leaf first.
type sample struct {
	arm    string
	at     time.Duration // CLOCK_MONOTONIC
	frames []string
}

// Build reads the samples perf recorded, keeps each arm's from its own measured slices, and
// writes ARM.pb.gz into dir for each arm; it returns the result's profiles section.
func (s *Sampler) Build(windows []Window, dir string) (*contract.Profiles, error) {
	farm, err := symbolFarm(s.cfg.Dir)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(farm)
	cmd := exec.Command(s.cmd.Path, "script", "-i", s.data, "--symfs", farm, "--ns", "-F", "event,pid,time,ip,sym,dso")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("perf script: %v", err)
	}
	agg := newAggregate(s.cfg.Arms, windows, s.monoMinusWall)
	parseErr := parseScript(out, s.cfg.Arms, agg.add)
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("perf script: %v: %s", err, lastLines(stderr.String(), 3))
	}
	if parseErr != nil {
		return nil, parseErr
	}
	p := agg.profiles()
	p.Event, p.FrequencyHz = "cpu-clock", s.cfg.FrequencyHz
	p.CPUSeconds = s.CPU().Seconds()
	p.Arms = map[string]contract.ProfileFile{}
	for _, a := range s.cfg.Arms {
		f, err := agg.writePprof(a.Name, dir, s.cfg.FrequencyHz)
		if err != nil {
			return nil, err
		}
		p.Arms[a.Name] = f
	}
	return p, nil
}

// symbolFarm is a directory of links to the host's own system directories, which perf script
// reads binaries through (--symfs): it names frames in the host's libraries and kernel, and
// never opens a file an arm could have written (its working copy, /tmp).
func symbolFarm(parent string) (string, error) {
	dir, err := os.MkdirTemp(parent, "symfs-")
	if err != nil {
		return "", err
	}
	for _, d := range []string{"usr", "lib", "lib64", "lib32", "bin", "sbin", "proc"} {
		if _, err := os.Lstat("/" + d); err == nil {
			if err := os.Symlink("/"+d, filepath.Join(dir, d)); err != nil {
				os.RemoveAll(dir)
				return "", err
			}
		}
	}
	return dir, nil
}

var (
	// "  1234  1064.870048959:   champion: "
	headerLine = regexp.MustCompile(`^\s*\d+\s+(\d+)\.(\d{9}):\s+([a-z]+):\s*$`)
	// "\t            68be0 [unknown] (/path/to/dso)"
	frameLine = regexp.MustCompile(`^\t\s*([0-9a-f]+) (.*) \((.*)\)$`)
)

// parseScript reads perf script's samples and hands each, its frames named, to add. Only the
// arms' own events are read; a line of neither form fails the whole profile, rather than
// guess at what a name with a line break in it meant.
func parseScript(r io.Reader, arms []Arm, add func(sample)) error {
	names := map[string]bool{}
	for _, a := range arms {
		names[a.Name] = true
	}
	syms := newSymbolizer(arms)
	defer syms.close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var cur *sample
	flush := func() {
		if cur != nil {
			add(*cur)
			cur = nil
		}
	}
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if text == "" {
			flush()
			continue
		}
		if m := headerLine.FindStringSubmatch(text); m != nil {
			flush()
			if !names[m[3]] {
				return fmt.Errorf("perf script line %d: event %q is not an arm's", line, m[3])
			}
			sec, _ := strconv.ParseInt(m[1], 10, 64)
			ns, _ := strconv.ParseInt(m[2], 10, 64)
			cur = &sample{arm: m[3], at: time.Duration(sec)*time.Second + time.Duration(ns)}
			continue
		}
		m := frameLine.FindStringSubmatch(text)
		if m == nil || cur == nil {
			return fmt.Errorf("perf script line %d is neither a sample nor a frame: %.80q", line, text)
		}
		if len(cur.frames) < maxDepth {
			cur.frames = append(cur.frames, syms.name(m[1], m[2], m[3]))
		}
	}
	flush()
	return sc.Err()
}

// aggregate holds each arm's in-window samples: their stacks for the pprof profile, and per
// slice the samples of each function.
type aggregate struct {
	arms    []string
	windows []Window // sorted by start
	offset  time.Duration
	stacks  map[string]map[string]int64 // arm -> stack (frames joined by \x00) -> samples
	total   map[string]int64            // arm -> samples
	cum     map[string]map[string]int64 // arm -> function -> samples with it on the stack
	slices  map[int]*sliceCount
	seen    map[string]int64 // samples with the function on the stack, both arms
}

type sliceCount struct {
	samples   int64
	cum, flat map[string]int64
}

func newAggregate(arms []Arm, windows []Window, offset time.Duration) *aggregate {
	a := &aggregate{windows: slices.Clone(windows), offset: offset, stacks: map[string]map[string]int64{}, total: map[string]int64{},
		cum: map[string]map[string]int64{}, slices: map[int]*sliceCount{}, seen: map[string]int64{}}
	for _, arm := range arms {
		a.arms = append(a.arms, arm.Name)
		a.stacks[arm.Name], a.cum[arm.Name] = map[string]int64{}, map[string]int64{}
	}
	sort.Slice(a.windows, func(i, j int) bool { return a.windows[i].Start.Before(a.windows[j].Start) })
	for _, w := range windows {
		a.slices[w.Index] = &sliceCount{cum: map[string]int64{}, flat: map[string]int64{}}
	}
	return a
}

// window is the measured slice of arm a sample at t (monotonic) falls in, if any.
func (a *aggregate) window(arm string, t time.Duration) (Window, bool) {
	wall := time.Unix(0, int64(t-a.offset))
	i := sort.Search(len(a.windows), func(i int) bool { return a.windows[i].End.After(wall) })
	if i < len(a.windows) && !wall.Before(a.windows[i].Start) && a.windows[i].Arm == arm {
		return a.windows[i], true
	}
	return Window{}, false
}

func (a *aggregate) add(s sample) {
	w, ok := a.window(s.arm, s.at)
	if !ok || len(s.frames) == 0 {
		return // the arm was idle (the other arm's slice), warming up, or between slices
	}
	a.stacks[s.arm][strings.Join(s.frames, "\x00")]++
	a.total[s.arm]++
	sc := a.slices[w.Index]
	sc.samples++
	sc.flat[s.frames[0]]++
	for i, f := range s.frames {
		if slices.Contains(s.frames[:i], f) {
			continue // recursion: a function is on the stack once per sample
		}
		sc.cum[f]++
		a.cum[s.arm][f]++
		a.seen[f]++
	}
}

// callers counts, for each picked function, the samples in which each other picked function is
// above it on the stack: from the distinct stacks with their counts, after the samples are in,
// which is far less work than per sample.
func (a *aggregate) callers(picked map[string]int) map[string]map[string]int64 {
	co := map[string]map[string]int64{}
	for _, arm := range a.arms {
		for key, n := range a.stacks[arm] {
			frames := strings.Split(key, "\x00")
			for i, f := range frames {
				if _, ok := picked[f]; !ok || slices.Contains(frames[:i], f) {
					continue
				}
				for j, g := range frames[i+1:] {
					if _, ok := picked[g]; !ok || g == f || slices.Contains(frames[i+1:i+1+j], g) {
						continue
					}
					if co[f] == nil {
						co[f] = map[string]int64{}
					}
					co[f][g] += n
				}
			}
		}
	}
	return co
}

// profiles is the result's section: the functions past minShare of either arm, their callers,
// and each slice's counts of them.
func (a *aggregate) profiles() *contract.Profiles {
	type share struct {
		name string
		of   float64
	}
	var picked []share
	for f := range a.seen {
		best := 0.0
		for _, arm := range a.arms {
			if a.total[arm] > 0 {
				best = max(best, float64(a.cum[arm][f])/float64(a.total[arm]))
			}
		}
		if best >= minShare {
			picked = append(picked, share{f, best})
		}
	}
	slices.SortFunc(picked, func(x, y share) int { return cmp.Or(cmp.Compare(y.of, x.of), cmp.Compare(x.name, y.name)) })
	picked = picked[:min(len(picked), maxFunctions)]
	index := map[string]int{}
	p := &contract.Profiles{Status: contract.ProfilesRecorded, Functions: []string{}, Callers: [][]int{}, Slices: []contract.ProfileSlice{}}
	for i, f := range picked {
		index[f.name] = i
		p.Functions = append(p.Functions, f.name)
	}
	co := a.callers(index)
	for _, f := range p.Functions {
		callers := []int{}
		for g, n := range co[f] {
			if j, ok := index[g]; ok && float64(n) >= alwaysAbove*float64(a.seen[f]) {
				callers = append(callers, j)
			}
		}
		slices.Sort(callers)
		p.Callers = append(p.Callers, callers)
	}
	for _, w := range a.windows {
		sc := a.slices[w.Index]
		ps := contract.ProfileSlice{Index: w.Index, Samples: sc.samples, Functions: [][3]int64{}}
		for f, n := range sc.cum {
			if j, ok := index[f]; ok {
				ps.Functions = append(ps.Functions, [3]int64{int64(j), n, sc.flat[f]})
			}
		}
		slices.SortFunc(ps.Functions, func(x, y [3]int64) int { return cmp.Compare(x[0], y[0]) })
		p.Slices = append(p.Slices, ps)
	}
	slices.SortFunc(p.Slices, func(x, y contract.ProfileSlice) int { return cmp.Compare(x.Index, y.Index) })
	return p
}

// writePprof writes arm's in-window samples as a gzipped pprof profile, ARM.pb.gz.
func (a *aggregate) writePprof(arm, dir string, hz int) (contract.ProfileFile, error) {
	period := int64(time.Second) / int64(hz)
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     period,
		Comments:   []string{"perf-gate: " + arm + "'s CPU stacks in its own measured slices (perf record -e cpu-clock)"},
	}
	var duration time.Duration
	for _, w := range a.windows {
		if w.Arm == arm {
			duration += w.End.Sub(w.Start)
		}
	}
	p.DurationNanos = int64(duration)
	locations := map[string]*profile.Location{}
	location := func(name string) *profile.Location {
		if l, ok := locations[name]; ok {
			return l
		}
		fn := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name}
		p.Function = append(p.Function, fn)
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn}}}
		p.Location = append(p.Location, l)
		locations[name] = l
		return l
	}
	stacks := make([]string, 0, len(a.stacks[arm]))
	for k := range a.stacks[arm] {
		stacks = append(stacks, k)
	}
	slices.Sort(stacks) // the same samples give the same bytes
	for _, k := range stacks {
		n := a.stacks[arm][k]
		s := &profile.Sample{Value: []int64{n, n * period}}
		for _, f := range strings.Split(k, "\x00") {
			s.Location = append(s.Location, location(f))
		}
		p.Sample = append(p.Sample, s)
	}
	if err := p.CheckValid(); err != nil {
		return contract.ProfileFile{}, fmt.Errorf("%s's profile: %v", arm, err)
	}
	name := arm + ".pb.gz"
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return contract.ProfileFile{}, err
	}
	if err := p.Write(f); err != nil {
		f.Close()
		return contract.ProfileFile{}, err
	}
	st, err := f.Stat()
	if err := cmp.Or(err, f.Close()); err != nil {
		return contract.ProfileFile{}, err
	}
	return contract.ProfileFile{File: name, Bytes: st.Size(), Samples: a.total[arm]}, nil
}
