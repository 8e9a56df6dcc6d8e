import { defineConfig } from "vitest/config";

/**
 * The suites that need no Docker (scripts/test-node24.mjs runs them on Node
 * 24): as vitest.config.ts, without the global setup that builds the box image.
 */
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // the chat platforms' list read first, as the roster command reads it (cli/main.ts)
    setupFiles: ["test/support/chat-platforms.ts"],
    testTimeout: 120_000,
    hookTimeout: 300_000,
    fileParallelism: false,
    // each file's time, for npm test's closing summary (scripts/test-timings.mjs)
    reporters: ["default", "./test/support/timing-reporter.ts"],
  },
});
