// Command image-overhead measures what running a build as a container image costs in serving
// latency: the same static binary of the example service, bare (a release directory) on the
// champion arm and as a FROM scratch image run by runc on the challenger arm, in one local gate
// (perf-gate run --local: same rate, same slices, alternating), then the per-arm medians of the
// slices' p50 and p99 and the gate's verdict. Run it as root on a quiet host, from benchmark-host:
//
//	go run ./bench/image-overhead -rate 1000 -pairs 40
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/image/imagetest"
)

func main() {
	rate := flag.Int("rate", 1000, "requests per second")
	pairs := flag.Int("pairs", 40, "pairs of slices")
	seconds := flag.Float64("slice-seconds", 0.5, "seconds per slice")
	ports := flag.String("ports", "18301,18302", "champion and challenger ports")
	foreign := flag.String("max-foreign-cores", "0.5", "CPU cores other work may take during a slice before it is dropped")
	swap := flag.Bool("swap", false, "the image on the champion arm and the bare binary on the challenger's, to tell the image's cost from the arms'")
	flag.Parse()
	if err := run(*rate, *pairs, *seconds, strings.Split(*ports, ","), *swap, *foreign); err != nil {
		fmt.Fprintln(os.Stderr, "image-overhead:", err)
		os.Exit(1)
	}
}

func run(rate, pairs int, seconds float64, ports []string, swap bool, foreign string) error {
	dir, err := os.MkdirTemp("", "perf-gate-image-overhead-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	imageTar, err := buildBoth(dir)
	if err != nil {
		return err
	}
	config := filepath.Join(dir, "perf-gate.yml")
	os.WriteFile(config, fmt.Appendf(nil, "service:\n  command: [./bin/service]\nslo: {percentile: 99, budget_ms: 50}\nslices: {seconds: %g, pairs: %d}\nworkloads:\n  - name: w\n    rates: [%d]\n    requests: [{path: /work}]\n", seconds, pairs, rate), 0o644)
	repo, _ := filepath.Abs("..")
	out := filepath.Join(dir, "out")
	champion, challenger := filepath.Join(dir, "bare"), imageTar
	what := map[string]string{"champion": "bare binary", "challenger": "image (runc)"}
	if swap {
		champion, challenger = challenger, champion
		what["champion"], what["challenger"] = what["challenger"], what["champion"]
	}
	cmd := exec.Command("node", filepath.Join(repo, "dist/cli.js"), "run", "--local", "--root", filepath.Join(dir, "host"),
		"--perf-host", filepath.Join(repo, "benchmark-host/bin/perf-host"), "--champion-port", ports[0], "--challenger-port", ports[1],
		"--config", config, "--champion", champion, "--challenger", challenger, "--out", out, "--max-foreign-cores", foreign)
	cmd.Stderr = os.Stderr
	verdict, err := cmd.Output()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		return err
	}
	header := fmt.Sprintf("%d pairs of %g s at %d req/s, one run", pairs, seconds, rate)
	return printArms(filepath.Join(out, "result.json"), header, what, string(verdict))
}

// buildBoth builds the example service into dir/bare (bin/service) and the same binary as a
// container image, dir/image.tar, whose path it returns.
func buildBoth(dir string) (string, error) {
	bin := filepath.Join(dir, "bare", "bin", "service")
	build := exec.Command("go", "build", "-o", bin, "./examples/service")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	// The image holds the same binary at /app/bin/service and runs from /app: the config's
	// command ./bin/service names it in both arms.
	layer, err := imagetest.LayerFromFile(bin, "app/bin/service")
	if err != nil {
		return "", err
	}
	img, err := imagetest.Build([]v1.Layer{layer}, v1.Config{WorkingDir: "/app"}, "")
	if err != nil {
		return "", err
	}
	var archive bytes.Buffer
	if err := imagetest.WriteArchive(&archive, img, "perf-gate.bench/service:bare"); err != nil {
		return "", err
	}
	imageTar := filepath.Join(dir, "image.tar")
	return imageTar, os.WriteFile(imageTar, archive.Bytes(), 0o644)
}

// printArms prints, under header, each arm's median slice p50 and p99 from the last run's
// result, and the verdict's lines.
func printArms(resultFile, header string, what map[string]string, verdict string) error {
	raw, err := os.ReadFile(resultFile)
	if err != nil {
		return err
	}
	var results []contract.HostResult
	if err := json.Unmarshal(raw, &results); err != nil {
		return fmt.Errorf("result.json: %w", err)
	}
	p50, p99 := map[string][]float64{}, map[string][]float64{}
	for _, s := range results[len(results)-1].Slices {
		p50[s.Arm] = append(p50[s.Arm], float64(s.LatencyUs.P50))
		p99[s.Arm] = append(p99[s.Arm], float64(s.LatencyUs.P99))
	}
	fmt.Println(header)
	for _, arm := range []string{"champion", "challenger"} {
		fmt.Printf("%-10s %-13s median of slice p50 %6.0f µs, median of slice p99 %6.0f µs\n", arm, what[arm], median(p50[arm]), median(p99[arm]))
	}
	for _, line := range strings.Split(verdict, "\n") {
		if strings.HasPrefix(line, "GREY") || strings.HasPrefix(line, "RED") || strings.HasPrefix(line, "GREEN") {
			fmt.Println(line)
		}
	}
	return nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	return s[len(s)/2]
}
