import { defineConfig } from "vitest/config";

// Two groups, one after the other. Unit tests (pure code, simulations, the GitHub contract, the
// workflows' linters) run in parallel. End-to-end files (*.e2e.test.ts: a real sshd, real
// services, the real load generator) run one at a time, after the units: their measurements
// must not share the cores with anything.
export default defineConfig({
  test: {
    benchmark: { include: ["test/**/*.bench.ts"] },
    testTimeout: 300_000,
    // The history page inlines uPlot's stylesheet as text (?raw); vitest empties CSS unless told.
    css: { include: [/uPlot\.min\.css/] },
    hookTimeout: 120_000,
    projects: [
      {
        extends: true,
        test: { name: "unit", include: ["test/**/*.test.ts"], exclude: ["test/**/*.e2e.test.ts"], sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        test: { name: "e2e", include: ["test/**/*.e2e.test.ts"], fileParallelism: false, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
