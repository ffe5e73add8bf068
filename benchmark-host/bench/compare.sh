#!/usr/bin/env bash
# Runs perf-gate's loadgen and two peers a user would pick (vegeta v12.13.0, wrk from Debian)
# against the same local example service at the same target rate, and prints side by side:
# achieved rate, p50/p99 as each tool reports them, and the generator's CPU per 1,000 requests.
#
#   RATE=2000 DURATION=20 CONNS=10 bash benchmark-host/bench/compare.sh
set -euo pipefail
RATE=${RATE:-2000}
DURATION=${DURATION:-20}
CONNS=${CONNS:-10}
PORT=${PORT:-18555}
here=$(cd "$(dirname "$0")" && pwd)
hostdir=$(dirname "$here")
tools=$here/tools
work=$(mktemp -d)
trap 'kill $svc_pid 2>/dev/null; rm -rf "$work"' EXIT

need() { command -v "$1" >/dev/null || { apt-get update -qq && apt-get install -y -qq "$2" >/dev/null; }; }
need wrk wrk
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }
make -s -C "$hostdir" loadgen
go build -C "$hostdir" -o "$work/service" ./examples/service
if [ ! -x "$tools/vegeta" ]; then
  # The module proxy refuses vegeta's version list, so `go install …@v12.13.0` fails; a
  # throwaway module that requires the exact version builds it.
  mkdir -p "$tools" "$work/vegeta"
  (cd "$work/vegeta" && go mod init vegetabuild >/dev/null 2>&1 &&
   printf '//go:build tools\npackage tools\nimport _ "github.com/tsenart/vegeta/v12"\n' >tools.go &&
   go get github.com/tsenart/vegeta/v12@v12.13.0 >/dev/null 2>&1 &&
   go build -o "$tools/vegeta" github.com/tsenart/vegeta/v12)
fi

PORT=$PORT HASH_ROUNDS=${HASH_ROUNDS:-50} "$work/service" >/dev/null & svc_pid=$!
url="http://127.0.0.1:$PORT/work?key=bench"
for _ in $(seq 50); do curl -sf "$url" >/dev/null && break; sleep 0.1; done

timed() { local name=$1; shift; /usr/bin/time -f '%U %S' -o "$work/$name.cpu" "$@"; }

# loadgen: one pair of slices, both arms on the same server, no warmups, the whole duration.
half=$(awk "BEGIN{print $DURATION/2}")
cat >"$work/plan.json" <<JSON
{"targets":{"champion":"http://127.0.0.1:$PORT","challenger":"http://127.0.0.1:$PORT"},
 "rate":$RATE,"slice_seconds":$half,"pairs":1,"seed":1,"warmup_seconds":0,"slice_warmup_ms":0,
 "connections":$CONNS,"requests":[{"path":"/work?key=bench"}]}
JSON
timed loadgen "$hostdir/bin/loadgen" --plan "$work/plan.json" >"$work/loadgen.json" 2>/dev/null

echo "GET $url" | timed vegeta "$tools/vegeta" attack -rate="$RATE/s" -duration="${DURATION}s" \
  -connections="$CONNS" -keepalive=true >"$work/vegeta.bin"
"$tools/vegeta" report -type=json <"$work/vegeta.bin" >"$work/vegeta.json"

# wrk is closed-loop; its Lua delay() hook (whole milliseconds) is how users cap its rate.
delay_ms=$(awk "BEGIN{printf \"%d\", $CONNS*1000/$RATE}")
printf 'function delay() return %d end\n' "$delay_ms" >"$work/pace.lua"
timed wrk wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency -s "$work/pace.lua" "$url" >"$work/wrk.txt"

python3 - "$work" "$RATE" <<'PY'
import json, re, sys
work, rate = sys.argv[1], float(sys.argv[2])
def cpu(name):
    u, s = open(f"{work}/{name}.cpu").read().split()[-2:]
    return float(u) + float(s)
rows = []
lg = json.load(open(f"{work}/loadgen.json"))
sl = lg["slices"]
sent = sum(s["sent"] for s in sl) + lg["warmup"]["sent"] + 2 * lg["plan"]["connections"]
worst = max(abs(s["achieved_rps"] - rate) / rate for s in sl)
rows.append(("perf-gate loadgen", sum(s["achieved_rps"] for s in sl) / len(sl),
             max(s["latency_us"]["p50"] for s in sl) / 1000, max(s["latency_us"]["p99"] for s in sl) / 1000,
             cpu("loadgen") / sent * 1000, sent,
             f"worst slice rate error {worst*100:.3f}%; dispatch lag p50 {max(s['dispatch_lag_us']['p50'] for s in sl)} us, "
             f"p99 {max(s['dispatch_lag_us']['p99'] for s in sl)} us; latency from intended send"))
vg = json.load(open(f"{work}/vegeta.json"))
rows.append(("vegeta v12.13.0", vg["rate"], vg["latencies"]["50th"] / 1e6, vg["latencies"]["99th"] / 1e6,
             cpu("vegeta") / vg["requests"] * 1000, vg["requests"], "latency from actual send"))
w = open(f"{work}/wrk.txt").read()
def wrk_ms(label):
    m = re.search(rf"{label}\s+([\d.]+)(us|ms|s)\b", w)
    v, unit = float(m.group(1)), m.group(2)
    return v / 1000 if unit == "us" else v * 1000 if unit == "s" else v
n = int(re.search(r"(\d+) requests in", w).group(1))
rows.append(("wrk 4 (delay()-paced)", float(re.search(r"Requests/sec:\s+([\d.]+)", w).group(1)),
             wrk_ms("50%"), wrk_ms("99%"), cpu("wrk") / n * 1000, n, "closed loop: coordinated omission"))
print(f"target rate {rate:.0f} req/s")
print(f"{'tool':<24}{'achieved/s':>11}{'p50 ms':>9}{'p99 ms':>9}{'CPU s/1k req':>14}{'requests':>10}  notes")
for name, r, p50, p99, c, n, note in rows:
    print(f"{name:<24}{r:>11.1f}{p50:>9.3f}{p99:>9.3f}{c:>14.4f}{n:>10}  {note}")
base = rows[1][4]
print(f"loadgen CPU per request = {rows[0][4]/base:.2f}x vegeta's")
PY
