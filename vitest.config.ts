import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    benchmark: { include: ["test/**/*.bench.ts"] },
    // Simulations and tests on real processes (sshd, services, the load generator) take seconds,
    // and measurements must not share the two cores with a CPU-bound simulation in parallel.
    fileParallelism: false,
    testTimeout: 300_000,
    hookTimeout: 120_000,
  },
});
