import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig, planRuns, sliceDesign } from "../../src/config/gate-config";

const good = `service:
  command: ["./start.sh"]
  env: {GOMAXPROCS: "2"}
slo:
  percentile: 99
  budget_ms: 200
slices: {seconds: 9, pairs: 10}
workloads:
  - name: checkout
    rates: {production_rps: 2000, multiples: [0.5, 1, 1.5]}
    requests:
      - path: /items/{{rand 1000}}
        weight: 9
      - {method: POST, path: /orders, body: '{"id":"{{run}}-{{seq}}"}'}
  - name: health
    rates: [100]
    requests: [{path: /health}]
`;

const errorOf = (text: string) => {
  try {
    parseConfig(text, ".github/perf-gate.yml");
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error("no error");
};

describe("repo config", () => {
  it("fills defaults and resolves multiples of the production rate into one run per rate", () => {
    const c = parseConfig(good, "x");
    expect(c.block_threshold_percent).toBe(1);
    expect(c.service.health_path).toBe("/health");
    expect(c.slices.order).toBe("abba");
    const runs = planRuns(c, { challengerSha: "abc1234" }, 7);
    expect(runs.map((r) => `${r.workload}@${r.rate}`)).toEqual([
      "checkout@1000",
      "checkout@2000",
      "checkout@3000",
      "health@100",
    ]);
    expect(runs[0]!.request).toMatchObject({ challenger_sha: "abc1234", service: { command: ["./start.sh"] } });
    expect(runs[0]!.request.loadgen).toMatchObject({
      workload: "checkout",
      rate: 1000,
      slice_seconds: 9,
      pairs: 10,
      seed: 7,
      order: "abba",
    });
  });

  it("sizes slices for the rate when the config leaves them out: three requests past the percentile per slice, 90 s in all", () => {
    const c = parseConfig(good.replace("slices: {seconds: 9, pairs: 10}\n", ""), "x");
    const design = (r: { request: { loadgen: { slice_seconds: number; pairs: number } } }) =>
      `${r.request.loadgen.pairs} x ${r.request.loadgen.slice_seconds} s`;
    // p99 reads a slice of at least 300 recorded requests, past its 0.2 s unrecorded start; at
    // least 0.5 s, at most 9 s, in quarter seconds; pairs fill 90 s.
    expect(planRuns(c, {}, 0).map(design)).toEqual(["90 x 0.5 s", "90 x 0.5 s", "90 x 0.5 s", "14 x 3.25 s"]);
    const p90 = parseConfig(
      good.replace("slices: {seconds: 9, pairs: 10}\n", "").replace("percentile: 99", "percentile: 90"),
      "x",
    );
    expect(planRuns(p90, {}, 0).map(design)).toEqual(["90 x 0.5 s", "90 x 0.5 s", "90 x 0.5 s", "90 x 0.5 s"]);
    const p999 = parseConfig(
      good.replace("slices: {seconds: 9, pairs: 10}\n", "").replace("percentile: 99", "percentile: 99.9"),
      "x",
    );
    expect(planRuns(p999, {}, 0).map(design)).toEqual(["14 x 3.25 s", "26 x 1.75 s", "36 x 1.25 s", "5 x 9 s"]);
    const at300 = parseConfig(
      good.replace("slices: {seconds: 9, pairs: 10}\n", "slices: {order: alternate}\n").replace("[100]", "[300]"),
      "x",
    );
    expect(planRuns(at300, {}, 0).map(design).at(-1)).toBe("36 x 1.25 s");
    expect(at300.slices.order).toBe("alternate");
    // Either given alone, the other fills the 90 s.
    const given = parseConfig(good.replace("slices: {seconds: 9, pairs: 10}", "slices: {seconds: 3}"), "x");
    expect(planRuns(given, {}, 0).map(design).at(0)).toBe("15 x 3 s");
  });

  it("takes a grpc workload: calls with messages, a descriptor set, the gRPC health check", () => {
    const grpc =
      good.replace('  env: {GOMAXPROCS: "2"}\n', "  health_check: grpc\n") +
      `  - name: ratelimit
    rates: [500]
    protocol: grpc
    proto_descriptor_set: api/ratelimit.pb
    requests:
      - grpc: {method: envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit, message: {domain: rl, descriptors: [{entries: [{key: k, value: "{{rand 100}}"}]}]}}
`;
    const c = parseConfig(grpc, "x");
    expect(c.service.health_check).toBe("grpc");
    const run = planRuns(c, { challengerSha: "abc1234" }, 7).find((r) => r.workload === "ratelimit")!;
    expect(run.request.loadgen).toMatchObject({ protocol: "grpc", proto_descriptor_set: "api/ratelimit.pb" });
    expect(run.request.loadgen.requests[0]).toEqual({
      grpc: {
        method: "envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit",
        message: { domain: "rl", descriptors: [{ entries: [{ key: "k", value: "{{rand 100}}" }] }] },
      },
      weight: 1,
    });
    // An http1 workload keeps its method and says nothing of a protocol (the wire's default).
    const http = planRuns(c, { challengerSha: "abc1234" }, 7)[0]!.request.loadgen;
    expect(http.protocol).toBeUndefined();
    expect(http.requests[0]).toMatchObject({ method: "GET", path: "/items/{{rand 1000}}" });

    expect(errorOf(grpc.replace("      - grpc: {method", "      - path: /x\n        grpc: {method"))).toMatch(
      /workloads\.2\.requests\.0\.path: a gRPC call has no path/,
    );
    expect(errorOf(grpc.replace("    protocol: grpc\n", ""))).toMatch(
      /workloads\.2\.requests\.0\.grpc: only a workload with protocol: grpc/,
    );
    expect(errorOf(grpc.replace("RateLimitService/ShouldRateLimit", "ShouldRateLimit"))).toMatch(
      /grpc\.method: package\.Service\/Method/,
    );
    expect(errorOf(grpc.replace("health_check: grpc", "health_check: tcp"))).toMatch(/service\.health_check/);
    expect(errorOf(grpc.replace("grpc: {method", "grpc: {deadline: 5, method"))).toMatch(
      /workloads\.2\.requests\.0\.grpc\.deadline: unknown key/,
    );
  });

  it("refuses a path with a control character, a workload named twice and a rate given twice, naming the key", () => {
    expect(errorOf(good.replace("path: /health}", 'path: "/a\\r\\nX-Injected: 1"}'))).toMatch(
      /workloads\.1\.requests\.0\.path: must start with \/ and hold no control characters/,
    );
    expect(errorOf(good.replace("name: health", "name: checkout"))).toMatch(
      /workloads\.1\.name: "checkout" names another workload/,
    );
    expect(errorOf(good.replace("rates: [100]", "rates: [100, 100]"))).toMatch(/workloads\.1\.rates: 100 req\/s twice/);
  });

  it("finds what the host's plan check would refuse in a request, with the key's line, before any build is deployed", () => {
    expect(errorOf(good.replace("/items/{{rand 1000}}", "/items/{{nope}}"))).toMatch(
      /perf-gate\.yml:12: workloads\.0\.requests\.0\.path: template "\/items\/\{\{nope\}\}": unknown placeholder \{\{nope\}\}/,
    );
    expect(errorOf(good.replace("/items/{{rand 1000}}", "/items/{{rand 0}}"))).toMatch(
      /workloads\.0\.requests\.0\.path: .*\{\{rand N\}\} needs a positive integer N, got "0"/,
    );
    expect(errorOf(good.replace('body: \'{"id":"{{run}}-{{seq}}"}\'', "body: '{{run'"))).toMatch(
      /workloads\.0\.requests\.1\.body: template "\{\{run": unclosed \{\{/,
    );
    expect(errorOf(good.replace("{path: /health}", '{path: /health, headers: {"Bad Header": x}}'))).toMatch(
      /workloads\.1\.requests\.0\.headers\.Bad Header: a header name: an HTTP token/,
    );
    expect(errorOf(good.replace("{path: /health}", '{path: /health, headers: {X-A: "a\\r\\nX-B: 1"}}'))).toMatch(
      /workloads\.1\.requests\.0\.headers\.X-A: must not contain CR, LF or NUL/,
    );
  });

  it("compares with the champion unless comparison_base says merge-base, which each run then names", () => {
    expect(parseConfig(good, "x").comparison_base).toBe("champion");
    const c = parseConfig(`${good}comparison_base: merge-base\n`, "x");
    expect(c.comparison_base).toBe("merge-base");
    expect(planRuns(c, { challengerSha: "abc1234", mergeBaseSha: "def5678" }, 7)[0]!.request).toMatchObject({
      challenger_sha: "abc1234",
      merge_base_sha: "def5678",
    });
    expect(errorOf(`${good}comparison_base: main\n`)).toMatch(
      /^\.github\/perf-gate\.yml:18: comparison_base: .*"champion"\|"merge-base"/,
    );
  });

  it("names an unknown key and its line", () => {
    expect(errorOf(good.replace("    rates: [100]", "    rates: [100]\n    rps: 5"))).toBe(
      ".github/perf-gate.yml:17: workloads.1.rps: unknown key",
    );
    expect(errorOf(`${good}extra: true\n`)).toMatch(/^\.github\/perf-gate\.yml:18: extra: unknown key$/);
  });

  it("names a misspelt key before the required key it leaves missing", () => {
    expect(errorOf(good.replace("    rates: [100]", "    rps: 100")).split("\n")).toEqual([
      ".github/perf-gate.yml:16: workloads.1.rps: unknown key",
      expect.stringMatching(/^\.github\/perf-gate\.yml:\d+: workloads\.1\.rates: a list of req\/s/),
    ]);
  });

  it("extends a gate up to twice by default; names a slices.max_extensions that is not 0 to 5 with its line", () => {
    expect(parseConfig(good, "x").slices.max_extensions).toBe(2);
    expect(
      parseConfig(
        good.replace("slices: {seconds: 9, pairs: 10}", "slices: {seconds: 9, pairs: 10, max_extensions: 0}"),
        "x",
      ).slices.max_extensions,
    ).toBe(0);
    for (const bad of ["9", "-1", "1.5", "two"]) {
      expect(
        errorOf(
          good.replace("slices: {seconds: 9, pairs: 10}", `slices: {seconds: 9, pairs: 10, max_extensions: ${bad}}`),
        ),
      ).toMatch(/^\.github\/perf-gate\.yml:\d+: slices\.max_extensions: /);
    }
  });

  it("takes each slice's unrecorded start as slices.discard_ms into the plan, sizes default slices by it, and names one as long as the slice", () => {
    const withDiscard = (slices: string) =>
      parseConfig(good.replace("slices: {seconds: 9, pairs: 10}", `slices: ${slices}`), "x");
    expect(planRuns(withDiscard("{seconds: 9, pairs: 10, discard_ms: 50}"), {}, 7)[0]!.request.loadgen).toMatchObject({
      slice_warmup_ms: 50,
    });
    expect(planRuns(parseConfig(good, "x"), {}, 7)[0]!.request.loadgen.slice_warmup_ms).toBeUndefined(); // the plan's own default
    // At 1,000 req/s and p99 a slice records 300 requests past its discard: 0.5 s at the default
    // 200 ms, and still the shortest default, 0.5 s, at 50 ms.
    expect(sliceDesign(withDiscard("{}"), 1000)).toEqual({ seconds: 0.5, pairs: 90 });
    expect(sliceDesign(withDiscard("{discard_ms: 450}"), 1000)).toEqual({ seconds: 0.75, pairs: 60 });
    expect(errorOf(good.replace("slices: {seconds: 9, pairs: 10}", "slices: {seconds: 0.5, discard_ms: 500}"))).toMatch(
      /^\.github\/perf-gate\.yml:\d+: slices\.discard_ms: must be shorter than the slice/,
    );
    expect(errorOf(good.replace("slices: {seconds: 9, pairs: 10}", "slices: {seconds: 0.2}"))).toMatch(
      /^\.github\/perf-gate\.yml:\d+: slices\.seconds: must be longer than the unrecorded start of every slice \(slices\.discard_ms, 200 ms when left out\)/,
    );
    expect(sliceDesign(withDiscard("{seconds: 0.2, discard_ms: 50}"), 1000)).toEqual({ seconds: 0.2, pairs: 225 });
    expect(errorOf(good.replace("slices: {seconds: 9, pairs: 10}", "slices: {discard_ms: -1}"))).toMatch(
      /slices\.discard_ms: /,
    );
  });

  it("names a negative SLO and its line", () => {
    expect(errorOf(good.replace("budget_ms: 200", "budget_ms: -5"))).toMatch(
      /^\.github\/perf-gate\.yml:6: slo\.budget_ms: .*>0/,
    );
  });

  it("leaves the start command out for a container image, which brings its own, and names an empty one", () => {
    expect(parseConfig(good.replace('  command: ["./start.sh"]\n', ""), "x").service.command).toBeUndefined();
    expect(errorOf(good.replace('["./start.sh"]', "[]"))).toMatch(/service\.command: the start command/);
  });

  it("takes a stateful, multi-port service's ports, state and setup, and names what the host would refuse with its line", () => {
    const etcd = good.replace(
      '  command: ["./start.sh"]\n  env: {GOMAXPROCS: "2"}',
      [
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the config's own ${VAR} syntax, expanded by the host
        '  command: [/usr/bin/etcd, --listen-client-urls, "http://127.0.0.1:$PORT", --listen-peer-urls, "http://127.0.0.1:${PORT_PEER}", "$HOME"]',
        "  ports: [peer]",
        '  setup: [./bin/load-fixture, "$STATE_DIR"]',
        "  env: {ETCD_NAME: default}",
      ].join("\n"),
    );
    const c = parseConfig(etcd, "x");
    expect(c.service).toMatchObject({
      ports: ["peer"],
      state: "fresh",
      setup: ["./bin/load-fixture", "$STATE_DIR"],
      setup_timeout_seconds: 60,
    });
    expect(planRuns(c, { challengerSha: "abc1234" }, 7)[0]!.request.service).toMatchObject({
      ports: ["peer"],
      state: "fresh",
    });
    expect(errorOf(etcd.replace("ports: [peer]", "ports: [admin]"))).toBe(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the config's own ${VAR} syntax, expanded by the host
      '.github/perf-gate.yml:2: service.command.4: "http://127.0.0.1:${PORT_PEER}": $PORT_PEER is not a port of service.ports or service.dependencies ($PORT, $PORT_ADMIN, $STATE_DIR expand here)',
    );
    expect(errorOf(etcd.replace("ports: [peer]", "ports: [peer, Peer]"))).toMatch(
      /^\.github\/perf-gate\.yml:3: service\.ports\.1: a lowercase name/,
    );
    expect(errorOf(etcd.replace("ports: [peer]", "ports: [peer, peer]"))).toBe(
      '.github/perf-gate.yml:3: service.ports.1: "peer" is named twice',
    );
    expect(errorOf(etcd.replace("ETCD_NAME: default", "PORT_PEER: '2380'"))).toBe(
      ".github/perf-gate.yml:5: service.env.PORT_PEER: set by the host (PATH, HOME, PORT, PORT_<NAME> and STATE_DIR are the host's); name another variable",
    );
    expect(errorOf(etcd.replace("ETCD_NAME: default", "STATE_DIR: /tmp"))).toMatch(
      /^\.github\/perf-gate\.yml:5: service\.env\.STATE_DIR: set by the host/,
    );
    expect(errorOf(etcd.replace("ports: [peer]", "ports: [peer]\n  state: shared"))).toMatch(
      /^\.github\/perf-gate\.yml:4: service\.state: .*"fresh"\|"persistent"/,
    );
  });

  it("takes dependencies, port_env and proto_files as the host does, and names what the host would refuse with its line", () => {
    const rl = `service:
  command: ["./bin/ratelimit"]
  port_env: GRPC_PORT
  ports: [http]
  env: {PORT: $PORT_HTTP, REDIS_URL: "127.0.0.1:$PORT_REDIS"}
  dependencies:
    - {name: redis, ready: {tcp: PORT_REDIS}, command: [/usr/bin/redis-server, --port, $PORT_REDIS, --dir, $STATE_DIR]}
  health_check: grpc
slo: {budget_ms: 20}
workloads:
  - name: hit
    rates: [500]
    protocol: grpc
    proto_files: [envoy/service/ratelimit/v3/rls.proto]
    proto_import_paths: [api/envoy, api/xds]
    requests:
      - grpc: {method: a.B/C}
`;
    const c = parseConfig(rl, "x");
    expect(c.service).toMatchObject({
      port_env: "GRPC_PORT",
      ready_timeout_seconds: 30,
      dependencies: [{ name: "redis", ready: { tcp: "PORT_REDIS" } }],
    });
    expect(planRuns(c, { challengerSha: "abc1234" }, 7)[0]!.request.loadgen).toMatchObject({
      proto_files: ["envoy/service/ratelimit/v3/rls.proto"],
      proto_import_paths: ["api/envoy", "api/xds"],
    });
    expect(
      parseConfig(rl.replace("  port_env: GRPC_PORT\n", "").replace("PORT: $PORT_HTTP, ", ""), "x").service.port_env,
    ).toBe("PORT");

    const at = (line: number, msg: string) => `.github/perf-gate.yml:${line}: ${msg}`;
    expect(errorOf(rl.replace("{name: redis", "{name: http"))).toBe(
      at(
        7,
        'service.dependencies.0.name: "http" is service.ports[0] already: each port (and each dependency, which is its own port $PORT_HTTP) needs a name of its own',
      ),
    );
    expect(errorOf(rl.replace("{tcp: PORT_REDIS}", "{tcp: PORT_HTTP}"))).toBe(
      at(
        7,
        'service.dependencies.0.ready.tcp: "PORT_HTTP" is not a port of this dependency: name one of PORT_REDIS (the variable, as command names it)',
      ),
    );
    expect(errorOf(rl.replace("{tcp: PORT_REDIS}", "{}"))).toBe(
      at(
        7,
        "service.dependencies.0.ready: required: {tcp: PORT_REDIS} (a TCP connect to it succeeds) or {command: [...]} (exits 0)",
      ),
    );
    expect(errorOf(rl.replace("--port, $PORT_REDIS", "--port, $PORT"))).toBe(
      at(
        7,
        "service.dependencies.0.command.2: \"$PORT\": $PORT is the service's port, not a dependency's: use its own $PORT_<NAME>",
      ),
    );
    expect(
      parseConfig(
        rl.replace("command: [/usr/bin/redis-server", "env: {PORT: $PORT_REDIS}, command: [/usr/bin/redis-server"),
        "x",
      ).service.dependencies![0]!.env,
    ).toEqual({ PORT: "$PORT_REDIS" });
    expect(
      errorOf(rl.replace("command: [/usr/bin/redis-server", "env: {HOME: /}, command: [/usr/bin/redis-server")),
    ).toBe(
      at(
        7,
        "service.dependencies.0.env.HOME: set by the host (PATH, HOME, PORT_<NAME> and STATE_DIR are the host's); name another variable",
      ),
    );
    expect(errorOf(rl.replace("port_env: GRPC_PORT", "port_env: STATE_DIR"))).toMatch(
      /^\.github\/perf-gate\.yml:3: service\.port_env: "STATE_DIR" is set by the host already/,
    );
    expect(errorOf(rl.replace("port_env: GRPC_PORT", "port_env: PORT_GRPC"))).toMatch(
      /^\.github\/perf-gate\.yml:3: service\.port_env: "PORT_GRPC" is set by the host already/,
    );
    expect(errorOf(rl.replace("port_env: GRPC_PORT", "port_env: grpc-port"))).toMatch(
      /^\.github\/perf-gate\.yml:3: service\.port_env: a variable name/,
    );
    expect(errorOf(rl.replace("  port_env: GRPC_PORT\n", ""))).toBe(
      at(
        4,
        "service.env.PORT: set by the host (PATH, HOME, PORT, PORT_<NAME> and STATE_DIR are the host's); name another variable",
      ),
    );
    expect(errorOf(rl.replace("PORT: $PORT_HTTP", "GRPC_PORT: '1'"))).toMatch(
      /^\.github\/perf-gate\.yml:\d+: service\.env\.GRPC_PORT: set by the host \(PATH, HOME, GRPC_PORT,/,
    );
    expect(errorOf(rl.replace("127.0.0.1:$PORT_REDIS", "127.0.0.1:$PORT_CACHE"))).toMatch(
      /service\.env\.REDIS_URL: "127\.0\.0\.1:\$PORT_CACHE": \$PORT_CACHE is not a port of service\.ports or service\.dependencies/,
    );
    expect(errorOf(rl.replace("[envoy/service/ratelimit/v3/rls.proto]", "[../rls.proto]"))).toMatch(
      /workloads\.0\.proto_files\.0: must be a relative path inside the build \(each arm's release\), got "\.\.\/rls\.proto"/,
    );
    expect(errorOf(rl.replace("[api/envoy, api/xds]", "[/usr/include]"))).toMatch(
      /workloads\.0\.proto_import_paths\.0: must be a relative path inside the build/,
    );
    expect(
      errorOf(rl.replace("    protocol: grpc\n", "").replace("      - grpc: {method: a.B/C}", "      - path: /")),
    ).toMatch(/workloads\.0\.proto_files: only a grpc workload describes its methods/);
    expect(errorOf(rl.replace("proto_import_paths: [api/envoy, api/xds]", "proto_descriptor_set: api.pb"))).toMatch(
      /workloads\.0\.proto_files: give proto_files or proto_descriptor_set, not both/,
    );
  });

  it("names bad rates, paths and YAML", () => {
    expect(errorOf(good.replace("rates: [100]", "rates: fast"))).toMatch(/workloads\.1\.rates: a list of req\/s/);
    expect(errorOf(good.replace("path: /health", "path: health"))).toMatch(
      /workloads\.1\.requests\.0\.path: must start with \//,
    );
    expect(errorOf("service: [\n")).toMatch(/^\.github\/perf-gate\.yml:\d+: not valid YAML/);
    // A billion laughs: aliases nine deep, nine wide, refused where they start.
    const bomb = ["a: &a [x, x, x, x, x, x, x, x, x]"];
    for (const [i, name] of ["b", "c", "d", "e"].entries()) {
      const prev = "abcd"[i]!;
      bomb.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(", ")}]`);
    }
    expect(errorOf(`${good}${bomb.join("\n")}\n`)).toMatch(
      /^\.github\/perf-gate\.yml:\d+: not valid YAML: Excessive alias count .* \(its aliases \*a, \*b, \*c, \*d expand too far; write the values out\)$/,
    );
    expect(errorOf(`${good}x: 1\ny: *nope\n`)).toMatch(
      /^\.github\/perf-gate\.yml:\d+: not valid YAML: Unresolved alias .*: nope$/,
    );
    const lines = good.split("\n").length;
    expect(errorOf(`${good}x: 1\ny: *nope\n`)).toMatch(new RegExp(`^\\.github/perf-gate\\.yml:${lines + 1}: `));
  });
});

describe("the README's config examples", () => {
  const readme = readFileSync(join(import.meta.dirname, "../../README.md"), "utf8");
  const examples = [...readme.matchAll(/```yaml\n([\s\S]*?)```/g)]
    .map((m) => ({ line: readme.slice(0, m.index).split("\n").length + 1, text: m[1]! }))
    .filter(({ text }) => /^workloads:/m.test(text));

  it("are found: the config reference, etcd, a container image and gRPC", () => {
    expect(examples.length).toBeGreaterThanOrEqual(4);
  });

  it.each(examples.map((e) => [e.line, e.text] as const))("README.md:%i parses as a whole config", (line, text) => {
    expect(() => parseConfig(text, `README.md:${line}`)).not.toThrow();
  });
});
