import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    benchmark: { include: ["test/**/*.bench.ts"] },
    // Simulations and tests on real processes (sshd, services, the load generator) take seconds.
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
