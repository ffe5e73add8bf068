// What a waiting gate costs the host it waits for (docs/design/0026-a-pool-of-hosts.md), side by
// side: a look (perf-host status over ssh), one host's wait as it was (perf-host aa/run retried on
// a busy host: its lock wait, then busy, every 15 s), and the pool's wait (perf-host wait on the
// run that holds the host: one session for the run's length). Each is measured on a real sshd +
// perf-host (benchmark-host/e2e/testhost, as root) while another run holds the host, as the
// sshd's reaped children's CPU time (/proc/PID/stat cutime + cstime) and the client's wall time.
//
//   sudo node scripts/pool-probe-bench.mjs [--probes 20] [--lock-wait 10s]
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: { probes: { type: "string", default: "20" }, "lock-wait": { type: "string", default: "10s" } },
});
const probes = Number(values.probes);
const hostDir = join(import.meta.dirname, "..", "benchmark-host");
const work = mkdtempSync(join(tmpdir(), "perf-gate-probe-bench-"));
execFileSync("make", ["-s", "-C", hostDir, "all"], { stdio: "inherit" });
execFileSync("go", ["build", "-o", join(work, "testhost"), "./e2e/testhost"], { cwd: hostDir });
execFileSync("go", ["build", "-o", join(work, "release", "service"), "./examples/service"], { cwd: hostDir });
writeFileSync(join(work, "release", "start.sh"), "#!/bin/sh\nexec ./service\n", { mode: 0o755 });

const testhost = spawn(
  join(work, "testhost"),
  ["--perf-host", join(hostDir, "bin/perf-host"), "--lock-wait", values["lock-wait"]],
  { stdio: ["pipe", "pipe", "inherit"] },
);
const host = JSON.parse(
  await new Promise((resolve) => createInterface({ input: testhost.stdout }).once("line", resolve)),
);
const ssh = (command, input = "") =>
  spawnSync(
    "ssh",
    [
      "-i",
      host.key,
      "-p",
      String(host.ssh_port),
      "-o",
      "BatchMode=yes",
      "-o",
      "StrictHostKeyChecking=yes",
      "-o",
      `UserKnownHostsFile=${host.known_hosts}`,
      "-o",
      "LogLevel=ERROR",
      `${host.user}@127.0.0.1`,
      "--",
      command,
    ],
    { input },
  );
/** CPU seconds of the sshd's finished sessions (everything a login ran: sshd's session, the forced command). */
const sessionCpu = () => {
  const fields = readFileSync(`/proc/${host.sshd_pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[13]) + Number(fields[14])) / 100; // cutime, cstime (fields 16, 17), in ticks of 1/100 s
};

try {
  const tarball = join(work, "release.tar.gz");
  execFileSync("tar", ["-czf", tarball, "-C", join(work, "release"), "."]);
  for (const [cmd, input] of [
    ["deploy champion aaaaaaa", readFileSync(tarball)],
    ["promote aaaaaaa", '{"command":["./start.sh"]}'],
  ]) {
    const r = ssh(cmd, input);
    if (r.status !== 0) throw new Error(`${cmd}: ${r.stderr}`);
  }
  // Another run holds the host for the whole measurement.
  const plan = {
    service: { command: ["./start.sh"] },
    loadgen: {
      workload: "hold",
      rate: 20,
      slice_seconds: 1,
      pairs: 600,
      warmup_seconds: 0,
      requests: [{ path: "/health" }],
    },
  };
  if (ssh("aa hold-probe", JSON.stringify(plan)).status !== 0) throw new Error("could not start the holding run");
  const measure = (label, command, input) => {
    const cpu0 = sessionCpu();
    const t = performance.now();
    const codes = new Set();
    for (let i = 0; i < probes; i++) codes.add(ssh(command, input).status);
    const wall = (performance.now() - t) / probes / 1000;
    return { label, cpuMs: ((sessionCpu() - cpu0) / probes) * 1000, wallS: wall, codes: [...codes] };
  };
  const look = measure("a look (status)", "status");
  const attempt = measure(
    `an A/A attempt on the busy host (lock wait ${values["lock-wait"]}, then busy)`,
    "aa probe-1",
    JSON.stringify(plan),
  );
  ssh("abort hold-probe");
  ssh("wait hold-probe");
  // A run of 30 s, watched from its start to its end by one session.
  const short = { ...plan, loadgen: { ...plan.loadgen, pairs: 15 } };
  if (ssh("aa hold-watch", JSON.stringify(short)).status !== 0) throw new Error("could not start the watched run");
  const cpu0 = sessionCpu();
  const t = performance.now();
  const watched = ssh("wait hold-watch");
  const watch = {
    label: "watching the run that holds the host (wait RUN-ID) to its end",
    cpuMs: (sessionCpu() - cpu0) * 1000,
    wallS: (performance.now() - t) / 1000,
    codes: [watched.status],
  };
  const perMinute = (m, every) =>
    `${(60 / every).toFixed(1)} sessions, ${((m.cpuMs * 60) / every).toFixed(0)} ms of CPU`;
  console.log(`${probes} calls each (the watch: one), on a host held by another run:\n`);
  console.log("| call | host CPU per call | client wall per call | exit codes | per waiting gate and minute |");
  console.log("| --- | ---: | ---: | --- | ---: |");
  console.log(
    `| ${look.label}: the pool's first look | ${look.cpuMs.toFixed(1)} ms | ${look.wallS.toFixed(2)} s | ${look.codes.join(", ")} | ${perMinute(look, 15)} if repeated every 15 s |`,
  );
  console.log(
    `| ${attempt.label}: one host's wait as it was | ${attempt.cpuMs.toFixed(1)} ms | ${attempt.wallS.toFixed(2)} s | ${attempt.codes.join(", ")} | ${perMinute(attempt, 15 + attempt.wallS)} |`,
  );
  console.log(
    `| ${watch.label}: the pool's wait | ${watch.cpuMs.toFixed(1)} ms | ${watch.wallS.toFixed(1)} s | ${watch.codes.join(", ")} | ${perMinute(watch, watch.wallS)} for a run of ${watch.wallS.toFixed(0)} s |`,
  );
  console.log(
    `\nratio, per minute of waiting: watching / retrying = ${(watch.cpuMs / watch.wallS / (attempt.cpuMs / (15 + attempt.wallS))).toFixed(2)}`,
  );
} finally {
  testhost.stdin.end();
}
