import { defineConfig } from "vitest/config";
import { ENGINE_TAGS } from "./test/support/engine-tags.ts";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // the chat platforms' list read first, as the roster command reads it (cli/main.ts)
    setupFiles: ["test/support/chat-platforms.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 120_000,
    hookTimeout: 300_000,
    // Docker suites share one engine on a 2-core machine: run files one at a time.
    fileParallelism: false,
    // the cases scripts/test-engines.mjs runs again under each other engine
    tags: ENGINE_TAGS,
    // each file's time, for npm test's closing summary (scripts/test-timings.mjs)
    reporters: ["default", "./test/support/timing-reporter.ts"],
  },
});
