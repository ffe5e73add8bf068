import { defineConfig } from "vitest/config";

// ALONE: the files that measure, a verdict, a latency or a CPU cost read from a real run being
// their premise (each says "machine too busy" when the host could not vouch for it:
// test/support/machine-too-busy.ts). They run alone, one at a time, after every other file.
// Every other file, unit (pure code, simulations, the GitHub contract, the workflows' linters, the modes in-process)
// or end to end (*.e2e.test.ts: a real sshd, real services, the real load generator, asserting on
// behaviour only), runs in parallel with the rest: the simulations keep the CPUs busy while the
// end-to-end files mostly wait on slices and health checks
// (docs/design/0031-tests-that-measure-run-alone.md).
const ALONE = [
  "test/action/etcd.e2e.test.ts",
  "test/action/gate.e2e.test.ts",
  "test/action/modes.e2e.test.ts",
  "test/action/pool.e2e.test.ts",
  "test/analysis/loadgen-output.e2e.test.ts",
  "test/analysis/port-bias.e2e.test.ts",
  "test/cli/cold-start.e2e.test.ts",
  "test/cli/dependencies-gate.e2e.test.ts",
  "test/cli/explain.e2e.test.ts",
  "test/cli/grpc-gate.e2e.test.ts",
  "test/cli/history.e2e.test.ts",
  "test/cli/image.e2e.test.ts",
  "test/cli/measured.e2e.test.ts",
  "test/cli/run.e2e.test.ts",
];

export default defineConfig({
  test: {
    benchmark: { include: ["test/**/*.bench.ts"] },
    testTimeout: 300_000,
    // The history page inlines uPlot's stylesheet as text (?raw); vitest empties CSS unless told.
    css: { include: [/uPlot\.min\.css/] },
    hookTimeout: 120_000,
    setupFiles: ["test/support/scratch-teardown.ts"],
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["test/**/*.test.ts"],
          exclude: ["test/**/*.e2e.test.ts"],
          maxWorkers: 4,
          // The simulations share the two cores with each other and with the tests of
          // behaviour, so each takes up to four times its CPU time: on the loaded VM the
          // extending gate's simulation took 458 s running alone and 600 s sharing. A timeout
          // here bounds a hang; it measures nothing.
          testTimeout: 1_200_000,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "e2e",
          include: ["test/**/*.e2e.test.ts"],
          exclude: ALONE,
          maxWorkers: 4,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: { name: "e2e-alone", include: ALONE, fileParallelism: false, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
