#!/usr/bin/env bash
# Runs perf-gate's loadgen and the peers a user would pick (wrk2, vegeta v12.13.0, k6 v1.3.0)
# against the same local example service, 10 connections on loopback, each generator on the
# same one core (taskset; the service is not pinned unless SVC_CPU says), and prints:
#   - the generator's own CPU seconds per 1,000 requests at 2k / 5k / 10k req/s (its process
#     only, from /usr/bin/time), with the ratio to wrk2's; beside it, how often the generator
#     slept per request (voluntary context switches: a wake-up costs more than the rest of a
#     request on a VM) and the p50 latency it reported for the same service, which shows the
#     generator's own lateness (wrk2's 1 ms timer resolution, counted from intended send time);
#   - loadgen once more at wrk2's timer resolution (send_window_us 1000, "loadgen@1ms"): each
#     request at most 1 ms late, as wrk2's are;
#   - the highest rate of a fixed ladder each holds within 0.5% for 10 s (loadgen: every 5 s
#     slice of a 10 s pair within 0.5% and valid; the others: the whole run's rate);
#   - loadgen's p50 shift against the service with a 2 ms delay (the truth is +2,000 µs plus
#     the sleep's own overshoot, which the service's time.Sleep adds on a loaded machine);
#   - where loadgen's CPU went (pprof of its 10k run).
#
#   WRK2=/path/to/wrk bash benchmark-host/bench/compare.sh
#   BASELINE=/tmp/loadgen-main MIX=classes CPU_RATES=5000 LADDER=5000 TOOLS= GRPC_RATE=0 bash benchmark-host/bench/compare.sh
#
# The second form measures a change to loadgen itself: BASELINE is another loadgen build (say
# main's: `git worktree add /tmp/main main && make -C /tmp/main/benchmark-host loadgen`), run
# beside this one with the same plans; without WRK2 the ratios are to it. MIX=classes gives
# loadgen's plans two request classes (/work and /report, 49:1), which each slice tallies on
# its own (docs/design/0020-request-classes.md); the default is /work alone.
#
# Environment: WRK2 (a wrk2 binary; required), DURATION (seconds per CPU run, default 10),
# LADDER (rates to climb, default "2000 5000 10000 15000 20000 25000 30000 40000 50000"),
# CPU_RATES (default "2000 5000 10000"), HASH_ROUNDS (service work per request, default 0),
# GEN_CPU (the generators' core, default 0), SVC_CPU (the service's cores, default any),
# TOOLS (the peers to run beside loadgen and wrk2, default "vegeta k6"), GRPC_RATE (the rate of
# the gRPC comparison, default 2000; 0 skips it).
#
# The gRPC comparison (docs/design/0015-grpc-and-h2c.md): loadgen's grpc protocol and ghz v0.121.0
# (go install) against examples/grpcservice (grpc-go), the same rate, connections and core; CPU per
# 1,000 calls and p50 side by side. ghz times each call from its actual send, loadgen from the
# intended one.
#
# wrk2 is not on any package registry this project may build from, and no script here builds
# fetched third-party source: build it yourself from https://github.com/giltene/wrk2
# (`make` in a clone; it needs OpenSSL and zlib headers) and point WRK2 at the `wrk` it makes.
set -euo pipefail
DURATION=${DURATION:-10}
LADDER=${LADDER:-"2000 5000 10000 15000 20000 25000 30000 40000 50000"}
CPU_RATES=${CPU_RATES:-"2000 5000 10000"}
CONNS=10
GEN_CPU=${GEN_CPU:-0}
SVC_CPU=${SVC_CPU:-}
here=$(cd "$(dirname "$0")" && pwd)
hostdir=$(dirname "$here")
tools=$here/tools
work=$(mktemp -d)
svc_pids=()
cleanup() {
  local pid
  for pid in "${svc_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

if [ -n "${BASELINE:-}" ] && [ ! -x "$BASELINE" ]; then
  echo "compare.sh: BASELINE ($BASELINE) is not a loadgen binary" >&2; exit 2
fi
if { [ -z "${WRK2:-}" ] || [ ! -x "$WRK2" ]; } && [ -z "${BASELINE:-}" ]; then
  sed -n '/^# wrk2 is not/,/^# (.make. in a clone/p' "$0" | sed 's/^# //' >&2
  echo "compare.sh: set WRK2 to a wrk2 binary (or BASELINE to another loadgen to compare with)" >&2
  exit 2
fi
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }
command -v taskset >/dev/null || { apt-get update -qq && apt-get install -y -qq util-linux >/dev/null; }
make -s -C "$hostdir" loadgen
go build -C "$hostdir" -o "$work/service" ./examples/service
TOOLS="loadgen loadgen@1ms${WRK2:+ wrk2}${BASELINE:+ baseline} ${TOOLS-vegeta k6}"
case ${MIX:-work} in
  work) mix='{"path":"/work?key=bench"}' ;;
  classes) mix='{"path":"/work?key=bench","weight":49},{"path":"/report?key=bench","weight":1}' ;;
  *) echo "compare.sh: MIX must be work or classes, got $MIX" >&2; exit 2 ;;
esac
mkdir -p "$tools"
if [[ " $TOOLS " == *" vegeta "* && ! -x "$tools/vegeta" ]]; then
  # The module proxy refuses vegeta's version list, so `go install …@v12.13.0` fails; a
  # throwaway module that requires the exact version builds it.
  mkdir -p "$work/vegeta"
  (cd "$work/vegeta" && go mod init vegetabuild >/dev/null 2>&1 &&
   printf '//go:build tools\npackage tools\nimport _ "github.com/tsenart/vegeta/v12"\n' >tools.go &&
   go get github.com/tsenart/vegeta/v12@v12.13.0 >/dev/null 2>&1 &&
   go build -o "$tools/vegeta" github.com/tsenart/vegeta/v12)
fi
[[ " $TOOLS " != *" k6 "* || -x "$tools/k6" ]] || GOBIN="$tools" go install go.k6.io/k6@v1.3.0

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
start_service() { # PORT [DELAY_US]
  local pin=(); [ -z "$SVC_CPU" ] || pin=(taskset -c "$SVC_CPU")
  PORT=$1 HASH_ROUNDS=${HASH_ROUNDS:-0} DELAY_US=${2:-0} "${pin[@]}" "$work/service" >/dev/null &
  svc_pids+=($!)
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$1/health" >/dev/null && return; sleep 0.05; done
  echo "compare.sh: the service did not start on :$1" >&2; exit 1
}
port=$(free_port); start_service "$port"
url="http://127.0.0.1:$port/work?key=bench"
gen=(taskset -c "$GEN_CPU")
# GNU time puts "Command exited with non-zero status N" before its line when the tool fails.
timed() { local out=$1; shift; /usr/bin/time -f '%U %S %w' -o "$out.raw" "$@"; local rc=$?; tail -n1 "$out.raw" >"$out"; return $rc; }

cat >"$work/k6.js" <<'JS'
import http from "k6/http";
export const options = {
  discardResponseBodies: true,
  summaryTrendStats: ["med"],
  scenarios: { load: { executor: "constant-arrival-rate", rate: Number(__ENV.RATE), timeUnit: "1s",
    duration: `${__ENV.DURATION}s`, preAllocatedVUs: Number(__ENV.CONNS), maxVUs: Number(__ENV.CONNS) } },
};
export default function () { http.get(__ENV.URL); }
JS

# run TOOL RATE SECONDS TAG: one run; writes $work/TAG.cpu and the tool's output.
run() {
  local tool=$1 rate=$2 secs=$3 tag=$4
  case $tool in
    loadgen*|baseline)
      local half window="" bin=$hostdir/bin/loadgen; half=$(awk "BEGIN{print $secs/2}")
      [ "$tool" != loadgen@1ms ] || window='"send_window_us":1000,'
      [ "$tool" != baseline ] || bin=$BASELINE
      printf '{"targets":{"champion":"http://127.0.0.1:%s","challenger":"http://127.0.0.1:%s"},"rate":%s,"slice_seconds":%s,"pairs":1,"seed":1,"warmup_seconds":0,"slice_warmup_ms":0,"connections":%s,"generator_cpus":1,%s"requests":[%s]}' \
        "${5:-$port}" "${6:-$port}" "$rate" "$half" "$CONNS" "$window" "$mix" >"$work/$tag.plan"
      timed "$work/$tag.cpu" "${gen[@]}" "$bin" --plan "$work/$tag.plan" --cpuprofile "$work/$tag.pprof" \
        >"$work/$tag.json" 2>/dev/null || true ;;
    wrk2)
      timed "$work/$tag.cpu" "${gen[@]}" "$WRK2" -t1 -c"$CONNS" -d"${secs}s" -R"$rate" --latency "$url" >"$work/$tag.txt" 2>&1 || true ;;
    vegeta)
      echo "GET $url" | timed "$work/$tag.cpu" "${gen[@]}" "$tools/vegeta" attack -rate="$rate/s" -duration="${secs}s" \
        -connections="$CONNS" -max-connections="$CONNS" -keepalive=true >"$work/$tag.bin" || true
      "$tools/vegeta" report -type=json <"$work/$tag.bin" >"$work/$tag.json" ;;
    k6)
      RATE=$rate DURATION=$secs CONNS=$CONNS URL=$url timed "$work/$tag.cpu" "${gen[@]}" "$tools/k6" run --quiet --no-color \
        --summary-export "$work/$tag.json" "$work/k6.js" >/dev/null 2>&1 || true ;;
  esac
}

# measure TOOL TAG RATE: prints "requests achieved_rate worst_error_fraction ok(0/1) p50_us".
measure() {
  python3 - "$1" "$work" "$2" "$3" <<'PY'
import json, re, statistics, sys
tool, work, tag, rate = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
def off(got): return abs(got - rate) / rate
try:
    if tool.startswith("loadgen") or tool == "baseline":
        r = json.load(open(f"{work}/{tag}.json")); sl = r["slices"]
        n = sum(s["sent"] for s in sl) + r["warmup"]["sent"] + 2 * r["plan"]["connections"]
        worst = max(off(s["achieved_rps"]) for s in sl)
        ok = len(sl) == 2 and all(s["valid"] for s in sl) and worst <= 0.005 and all(s["errors"]["connect"] + s["errors"]["timeout"] + s["errors"]["other"] == 0 for s in sl)
        print(n, sum(s["achieved_rps"] for s in sl) / len(sl), worst, int(ok), statistics.median(s["latency_us"]["p50"] for s in sl))
    elif tool == "wrk2":
        w = open(f"{work}/{tag}.txt").read()
        n = int(re.search(r"(\d+) requests in", w).group(1)); got = float(re.search(r"Requests/sec:\s+([\d.]+)", w).group(1))
        bad = re.search(r"Socket errors|Non-2xx", w) is not None
        m = re.search(r"^\s*50\.000%\s+([\d.]+)(us|ms|s|m)\s*$", w, re.M)  # --latency's table
        p50 = float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6, "m": 6e7}[m.group(2)] if m else float("nan")
        print(n, got, off(got), int(off(got) <= 0.005 and not bad), p50)
    elif tool == "vegeta":
        v = json.load(open(f"{work}/{tag}.json"))
        print(v["requests"], v["rate"], off(v["rate"]), int(off(v["rate"]) <= 0.005 and v["success"] == 1), v["latencies"]["50th"] / 1e3)
    elif tool == "k6":
        m = json.load(open(f"{work}/{tag}.json"))["metrics"]
        n = m["http_reqs"]["count"]; got = m["http_reqs"]["rate"]; dropped = m.get("dropped_iterations", {}).get("count", 0)
        failed = m.get("http_req_failed", {}).get("value", 0)
        print(n, got, off(got), int(off(got) <= 0.005 and dropped == 0 and not failed), m["http_req_duration"]["med"] * 1e3)
except Exception as e:
    print(0, 0, 1, 0, "nan")
PY
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
: >"$work/rows"
for tool in $TOOLS; do
  for rate in $CPU_RATES; do
    run "$tool" "$rate" "$DURATION" "$tool-cpu-$rate"
    read -r n got err ok p50 < <(measure "$tool" "$tool-cpu-$rate" "$rate")
    read -r u s sleeps <"$work/$tool-cpu-$rate.cpu"
    echo "cpu $tool $rate $n $got $err $ok $u $s $sleeps $p50" >>"$work/rows"
    echo "  $tool at $rate/s: $n requests, $(awk "BEGIN{print $u+$s}") CPU s, achieved $got/s, p50 $p50 µs" >&2
  done
  # The ceiling is the default's: at rates past 4,000 req/s per loop the default window batches too.
  [ "$tool" != loadgen@1ms ] || continue
  ceiling=0
  for rate in $LADDER; do
    run "$tool" "$rate" 10 "$tool-ceil-$rate"
    read -r n got err ok _ < <(measure "$tool" "$tool-ceil-$rate" "$rate")
    echo "  $tool ladder $rate/s: achieved $got/s, worst error $err, held=$ok" >&2
    [ "$ok" = 1 ] || { echo "ceil $tool $ceiling $rate $err" >>"$work/rows"; break; }
    ceiling=$rate
  done
  grep -q "^ceil $tool " "$work/rows" || echo "ceil $tool $ceiling - 0" >>"$work/rows"
done

# loadgen's accuracy: champion without delay, challenger with a 2 ms delay, 2,000 req/s.
dport=$(free_port); start_service "$dport" 2000
run loadgen 2000 10 shift "$port" "$dport"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

python3 - "$work" "$CPU_RATES" <<'PY'
import json, sys
work, rates = sys.argv[1], sys.argv[2].split()
cpu, sleeps, p50, ceil = {}, {}, {}, {}
for line in open(f"{work}/rows"):
    f = line.split()
    if f[0] == "cpu":
        tool, rate, n, u, s = f[1], f[2], int(f[3]), float(f[7]), float(f[8])
        cpu[(tool, rate)] = (u + s) / n * 1000 if n else float("nan")
        sleeps[(tool, rate)] = int(f[9]) / n if n else float("nan")
        p50[(tool, rate)] = float(f[10])
    else:
        ceil[f[1]] = (int(f[2]), f[3], float(f[4]))
names = {"loadgen": "perf-gate loadgen", "loadgen@1ms": "loadgen@1ms", "baseline": "loadgen (BASELINE)", "wrk2": "wrk2", "vegeta": "vegeta v12.13.0", "k6": "k6 v1.3.0"}
tools = [t for t in names if (t, rates[0]) in cpu]
ref = "wrk2" if ("wrk2", rates[0]) in cpu else "baseline"
print(f"CPU s per 1,000 requests (generator process only) at {' / '.join(rates)} req/s; ratio to {names[ref]} in brackets")
print(f"{'tool':<20}" + "".join(f"{r + '/s':>18}" for r in rates) + f"{'held within 0.5%':>20}{'  (next rung)':<24}")
for tool in tools:
    cells = "".join(f"{cpu[(tool, r)]:>9.4f} [{cpu[(tool, r)] / cpu[(ref, r)]:>4.2f}x] " for r in rates)
    c, nxt, err = ceil.get(tool, (0, "", 0))
    ratio = f"[{c / ceil[ref][0]:.2f}x]" if ceil.get(ref, (0,))[0] else ""
    held = f"{'–':>12}" if tool not in ceil else f"{c:>12,} {ratio:<8}  " + (f"{int(nxt):,}: {err * 100:.1f}% off" if nxt != "-" else "top of the ladder")
    print(f"{names[tool]:<20}{cells}{held}")
print(f"\nSleeps per request (voluntary context switches) and the p50 each reported for the same service (µs)")
print(f"{'tool':<20}" + "".join(f"{r + '/s':>19}" for r in rates))
for tool in tools:
    print(f"{names[tool]:<20}" + "".join(f"{sleeps[(tool, r)]:>10.2f} {p50[(tool, r)]:>7.0f} " for r in rates))
r = json.load(open(f"{work}/shift.json"))
sl = {s["arm"]: s for s in r["slices"]}
shift = sl["challenger"]["latency_us"]["p50"] - sl["champion"]["latency_us"]["p50"]
print(f"loadgen p50 shift against a 2 ms delay at 2,000 req/s: {shift:+d} µs "
      f"(champion p50 {sl['champion']['latency_us']['p50']} µs, dispatch lag p50 {sl['champion']['dispatch_lag_us']['p50']} µs "
      f"p99 {sl['champion']['dispatch_lag_us']['p99']} µs)")
for rate in rates:
    s = json.load(open(f"{work}/loadgen-cpu-{rate}.json"))["slices"]
    print(f"loadgen's own accounting at {rate}/s: generator_cpu_us_per_request " +
          ", ".join(f"{x['generator_cpu_us_per_request']:.1f}" for x in s) +
          "; generator_cpu_cores " + ", ".join(f"{x['generator_cpu_cores']:.3f}" for x in s))
PY
GRPC_RATE=${GRPC_RATE:-2000}
if [ "$GRPC_RATE" != 0 ]; then
  [ -x "$tools/ghz" ] || GOBIN="$tools" go install github.com/bojand/ghz/cmd/ghz@v0.121.0
  go build -C "$hostdir" -o "$work/grpcservice" ./examples/grpcservice
  gport=$(free_port)
  PORT=$gport "${pin[@]}" "$work/grpcservice" 2>/dev/null &
  svc_pids+=($!)
  for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$gport") 2>/dev/null && break; sleep 0.1; done
  half=$(awk "BEGIN{print $DURATION/2}")
  printf '{"targets":{"champion":"http://127.0.0.1:%s","challenger":"http://127.0.0.1:%s"},"rate":%s,"slice_seconds":%s,"pairs":1,"seed":1,"slice_warmup_ms":0,"connections":%s,"generator_cpus":1,"protocol":"grpc","requests":[{"grpc":{"method":"helloworld.Greeter/SayHello","message":{"name":"bench"}}}]}' \
    "$gport" "$gport" "$GRPC_RATE" "$half" "$CONNS" >"$work/grpc.plan"
  timed "$work/grpc-loadgen.cpu" "${gen[@]}" "$hostdir/bin/loadgen" --plan "$work/grpc.plan" >"$work/grpc-loadgen.json" 2>/dev/null || true
  timed "$work/grpc-ghz.cpu" "${gen[@]}" "$tools/ghz" --insecure --call helloworld.Greeter.SayHello -d '{"name":"bench"}' \
    --rps "$GRPC_RATE" -c "$CONNS" --connections "$CONNS" -z "${DURATION}s" -O json "127.0.0.1:$gport" >"$work/grpc-ghz.json" 2>/dev/null || true
  python3 - "$work" "$GRPC_RATE" <<'PY'
import json, statistics, sys
work, rate = sys.argv[1], sys.argv[2]
def cpu(tag, n):
    u, s = map(float, open(f"{work}/{tag}.cpu").read().split()[:2])  # user, system (timed keeps the last line)
    return (u + s) / n * 1000 if n else float("nan")
r = json.load(open(f"{work}/grpc-loadgen.json")); sl = r["slices"]
n = sum(s["sent"] for s in sl) + r["warmup"]["sent"] + 2 * r["plan"]["connections"]
lg = (cpu("grpc-loadgen", n), statistics.median(s["latency_us"]["p50"] for s in sl), sum(s["achieved_rps"] for s in sl) / len(sl), sum(s["errors"]["connect"] + s["errors"]["timeout"] + sum(s["errors"].get("grpc", {}).values()) for s in sl))
g = json.load(open(f"{work}/grpc-ghz.json"))
p50 = next((d["latency"] for d in g.get("latencyDistribution") or [] if d["percentage"] == 50), 0) / 1000
gz = (cpu("grpc-ghz", g["count"]), p50, g["rps"], sum(g.get("statusCodeDistribution", {}).get(k, 0) for k in g.get("statusCodeDistribution", {}) if k != "OK"))
print(f"\ngRPC at {rate} req/s (helloworld.Greeter/SayHello on grpc-go, {r['plan']['connections']} connections):")
print(f"{'tool':<20}{'CPU s / 1,000 calls':>22}{'p50 µs':>10}{'achieved/s':>12}{'errors':>8}")
for name, (c, p, a, e) in (("perf-gate loadgen", lg), ("ghz v0.121.0", gz)):
    print(f"{name:<20}{c:>14.4f} [{c / gz[0]:.2f}x]{p:>10.0f}{a:>12.1f}{e:>8}")
PY
fi

echo
echo "where loadgen's CPU went at ${CPU_RATES##* }/s (pprof; kernel time shows under the syscall that entered it):"
go tool pprof -top -nodecount=12 "$hostdir/bin/loadgen" "$work/loadgen-cpu-${CPU_RATES##* }.pprof" 2>/dev/null | sed -n '/flat%/,$p'
