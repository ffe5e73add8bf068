// How the benchmark host keeps the arms apart and places them (in status and every host
// result), and the champion's restarts a run saw. Mirrors benchmark-host/contract
// (isolation.go); test/contract checks that both sides declare the same fields.
import { z } from "zod";

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
  capabilities: z.array(z.string()),
  notes: z.array(z.string()),
});
export type Isolation = z.infer<typeof isolationSchema>;

/** Per arm, where a host result's per-slice service_* fields come from. */
export const resourceAccountingSchema = z.looseObject({ cpu: z.string(), memory: z.string() });

export const championEventSchema = z.looseObject({
  time: z.string(),
  event: z.enum(["started", "serving", "exited", "stopped"]),
  sha: z.string(),
  detail: z.string().optional(),
});
