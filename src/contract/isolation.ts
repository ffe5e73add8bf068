// How the benchmark host keeps the arms apart and places them (in status and every host
// result), and how each arm started for a run. Mirrors benchmark-host/contract
// (isolation.go); test/contract checks that both sides declare the same fields.
import { z } from "zod";
import { portName, sha } from "./plan";

const count = z.number().int().nonnegative();

export const isolationSchema = z.looseObject({
  cgroup: z.looseObject({
    mode: z.enum(["v2", "v2-core", "none"]),
    path: z.string().optional(),
    controllers: z.array(z.string()),
    note: z.string(),
  }),
  arms: z.record(
    z.string(),
    z.looseObject({
      user: z.string(),
      uid: count,
      dedicated_user: z.boolean(),
      cgroup: z.string().optional(),
      port: z.number().int(),
      home: z.string(),
    }),
  ),
  placement: z.looseObject({
    method: z.enum(["cpuset", "sched_setaffinity", "none"]),
    loadgen_cpus: z.string(),
    arm_cpus: z.string(),
  }),
  max_procs: z.looseObject({ limit: count, by: z.enum(["pids.max", "RLIMIT_NPROC", "none"]) }),
  network: z.string().optional(),
  disk: z.string().optional(),
  memory: z.string().optional(),
  private_mounts: z.string().optional(),
  capabilities: z.array(z.string()),
  notes: z.array(z.string()),
});
export type Isolation = z.infer<typeof isolationSchema>;

/** Per arm, where a host result's per-slice service_* fields come from. */
export const resourceAccountingSchema = z.looseObject({ cpu: z.string(), memory: z.string() });

/** How one arm started for a run (both the same way: a fresh copy, its own ports and STATE_DIR) and what it left on disk. */
export const armStartSchema = z.looseObject({
  sha,
  ports: z.record(z.string(), z.number().int()),
  state_dir: z.string(),
  state: z.enum(["fresh", "persistent"]),
  setup_seconds: z.number().min(0).optional(),
  started: z.string(),
  healthy_seconds: z.number().min(0),
  work_bytes: count.optional(),
  state_bytes: count.optional(),
  /** The arm's log: the bytes the host's cap cut from its middle, and its last lines. */
  log_cut_bytes: count.optional(),
  log_tail: z.string().optional(),
  /** Each of service.dependencies: its ports, how soon it was ready, what it used until the arm stopped. */
  dependencies: z
    .array(
      z.looseObject({
        name: portName,
        ports: z.record(z.string(), z.number().int()),
        ready_seconds: z.number().min(0),
        cpu_seconds: z.number().min(0).optional(),
        rss_bytes: count.optional(),
      }),
    )
    .optional(),
});
export type ArmStart = z.infer<typeof armStartSchema>;
