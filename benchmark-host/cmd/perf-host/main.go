// Command perf-host is the benchmark host agent. The CI key's authorized_keys entry forces
// `perf-host ssh --root DIR`, which accepts only the verbs of internal/grammar; the same
// verbs run from a terminal (local mode) go through the same grammar.
//
// Exit codes are the contract's (contract.ExitOK …): 0 done, 1 failed (or the run failed),
// 2 refused (bad command, bad plan), 3 not finished yet, 4 host busy.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/config"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/floor"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/agent/refused"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/cgroup"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/grammar"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/service"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/version"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func usage() int {
	fmt.Fprintf(os.Stderr, "usage: perf-host VERB [flags] [args]\nverbs: %s\n       stop (local only: the champion supervisor and its champion)\n       isolation (local only: the arms' isolation, checked as a run checks it)\n       ssh (forced command), execute, champion-daemon and cgroup-hold (internal), --version\n",
		strings.Join(grammar.Verbs(), ", "))
	return contract.ExitRefused
}

func run(args []string) int {
	if len(args) == 0 {
		return usage()
	}
	verb := args[0]
	if verb == "--version" || verb == "-version" {
		fmt.Println(version.Line("perf-host"))
		return 0
	}
	fs := flag.NewFlagSet("perf-host "+verb, flag.ContinueOnError)
	cfg := config.BindFlags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return contract.ExitRefused
	}
	if verb == "cgroup-hold" { // the systemd holder of the subtree: it needs no state
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return report(cgroup.Hold(ctx))
	}
	h, err := newHost(*cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "perf-host:", err)
		return contract.ExitFailed
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	switch verb {
	case "execute":
		if fs.NArg() != 1 || !grammar.ValidRunID(fs.Arg(0)) {
			return usage()
		}
		signal.Ignore(syscall.SIGHUP)
		return report(h.Runs.Execute(ctx, fs.Arg(0)))
	case "champion-daemon":
		signal.Ignore(syscall.SIGHUP)
		return report(h.Supervisor.Daemon(ctx))
	case "stop":
		// From a terminal only: the grammar of the forced command has no such verb, so a CI key
		// can never stop the champion.
		if fs.NArg() != 0 {
			return usage()
		}
		return say(h.Supervisor.Stop())
	case "isolation":
		// From a terminal only (install.sh's report): the grammar of the forced command has no
		// such verb, so a CI key cannot hold the host with it.
		if fs.NArg() != 0 {
			return usage()
		}
		return printJSON(h.CheckIsolation())
	case "ssh":
		return forcedCommand(ctx, h)
	default:
		cmd, err := grammar.Parse(strings.Join(append([]string{verb}, fs.Args()...), " "))
		if err != nil {
			fmt.Fprintln(os.Stderr, "perf-host: refused:", err)
			return contract.ExitRefused
		}
		return dispatch(ctx, h, cmd)
	}
}

// newHost is the agent on this configuration, its detached processes started from this
// executable.
func newHost(cfg config.Config) (*agent.Host, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return agent.New(cfg, exe)
}

// forcedCommand runs the verb the CI key's connection asked for (SSH_ORIGINAL_COMMAND),
// through the grammar, and writes who asked what to the audit log.
func forcedCommand(ctx context.Context, h *agent.Host) int {
	raw := os.Getenv("SSH_ORIGINAL_COMMAND")
	client := sshClient(os.Getenv("SSH_CONNECTION"))
	cmd, err := grammar.Parse(raw)
	if err != nil {
		h.Store.Audit(client, raw, "refused: "+err.Error())
		fmt.Fprintln(os.Stderr, "perf-host: refused:", err)
		return contract.ExitRefused
	}
	code := dispatch(ctx, h, cmd)
	h.Store.Audit(client, raw, fmt.Sprintf("exit %d", code))
	return code
}

// sshClient is "address:port" of the client, from SSH_CONNECTION ("addr port addr port").
func sshClient(conn string) string {
	f := strings.Fields(conn)
	if len(f) < 2 {
		return "unknown"
	}
	return f[0] + ":" + f[1]
}

func dispatch(ctx context.Context, h *agent.Host, c grammar.Command) int {
	switch c.Verb {
	case "deploy":
		return say(h.Champions.Deploy(c.Role, c.SHA, os.Stdin))
	case "run":
		return started(c.RunID, h.Runs.Start(c.RunID, contract.KindAB, os.Stdin))
	case "aa":
		return started(c.RunID, h.Runs.Start(c.RunID, contract.KindAA, os.Stdin))
	case "wait":
		out, err := h.Runs.Wait(ctx, c.RunID, os.Stdout)
		if err != nil {
			return report(err)
		}
		if out.Status != contract.StatusOK {
			return contract.ExitFailed
		}
		return 0
	case "result":
		b, err := h.Runs.Result(c.RunID)
		return write(append(b, '\n'), err)
	case "profile":
		return write(h.Runs.Profile(c.RunID, c.Role))
	case "abort":
		return say(fmt.Sprintf("run %s aborted", c.RunID), h.Runs.Abort(c.RunID))
	case "promote":
		spec, err := specFromStdin()
		if err != nil {
			return report(err)
		}
		return say(h.Champions.Promote(ctx, c.SHA, spec, c.PullRequest))
	case "rollback":
		return say(h.Champions.Rollback(ctx))
	case "status":
		return printJSON(h.Status())
	case "gc":
		removed, err := h.Store.GC(h.Config.KeepReleases, h.Config.KeepRuns, h.Config.LockWait)
		return printJSON(map[string]any{"removed": removed}, err)
	case "floors":
		return printJSON(floor.History(h.Store))
	case "runs":
		return printJSON(h.Store.Runs(c.SHA))
	case "floor-record":
		return say(recordFloor(h, c.RunID))
	case "gate-record":
		return say(h.Timeline.RecordGate(c.RunID, os.Stdin))
	case "drift-record":
		return say(h.Timeline.RecordDrift(c.RunID, os.Stdin))
	case "history":
		return printJSON(h.Timeline.Document())
	}
	return usage()
}

// recordFloor records an A/A floor, and the calibration in the history: the floor stands
// whether or not the history could keep it, and says so.
func recordFloor(h *agent.Host, runID string) (string, error) {
	rec, err := floor.Record(h.Store, runID, os.Stdin)
	if err != nil {
		return "", err
	}
	said := fmt.Sprintf("floor recorded from %s", runID)
	if err := h.Timeline.Calibrated(runID, rec); err != nil {
		return said + fmt.Sprintf("; not in the host's history: %v", err), nil
	}
	return said, nil
}

// specFromStdin reads an optional service spec for promote; an empty stdin keeps the stored one.
func specFromStdin() (*contract.ServiceSpec, error) {
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(os.Stdin, 64<<10))
	if err != nil || len(strings.TrimSpace(string(b))) == 0 {
		return nil, err
	}
	var spec contract.ServiceSpec
	if err := contract.Decode(strings.NewReader(string(b)), &spec); err != nil {
		return nil, refused.Errorf("service spec on stdin: %v", err)
	}
	if err := service.Validate(&spec); err != nil {
		return nil, &refused.Error{Err: err}
	}
	return &spec, nil
}

func started(runID string, err error) int {
	return say(fmt.Sprintf("started %s", runID), err)
}

func say(msg string, err error) int {
	if err != nil {
		return report(err)
	}
	fmt.Println(msg)
	return 0
}

// write copies a verb's bytes to stdout, unless err says there are none.
func write(b []byte, err error) int {
	if err != nil {
		return report(err)
	}
	os.Stdout.Write(b)
	return 0
}

// printJSON prints v as indented JSON, unless err says there is nothing to print.
func printJSON[T any](v T, err error) int {
	if err != nil {
		return report(err)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return report(err)
	}
	return 0
}

// report prints err and maps it to an exit code.
func report(err error) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(os.Stderr, "perf-host:", err)
	return agent.ExitCode(err)
}
