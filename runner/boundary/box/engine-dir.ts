import { existsSync } from "node:fs";
import { join } from "node:path";
import type { BoxMount } from "./container-spec.ts";
import { ENGINE_DIR, RUN_CLAUDE, RUN_CODEX, RUN_PI, RUN_ROSTER_MCP } from "./layout.ts";

/**
 * The mounts of `[engine] dir` (for development): a checkout's extensions/ and
 * the engine's launchers (run-pi, the MCP server of the tools for the other
 * agents, run-claude and run-codex), read-only, over the ones baked into the image, so an edited
 * tool runs in the next box without a build. pi and the extensions' runtime
 * dependencies stay the image's (a changed engine/package.json still needs
 * `roster box build`).
 */
export function engineDirMounts(dir: string): BoxMount[] {
  // the other agents' launchers where the checkout has them (one from before them has not)
  const launchers = [
    ["roster-mcp.ts", `${ENGINE_DIR}/roster-mcp.ts`],
    ["run-roster-mcp", RUN_ROSTER_MCP],
    ["run-claude", RUN_CLAUDE],
    ["run-codex", RUN_CODEX],
  ].filter(([name]) => existsSync(join(dir, "engine", name ?? "")));
  return [
    { source: join(dir, "extensions"), target: `${ENGINE_DIR}/extensions`, readOnly: true },
    { source: join(dir, "engine", "run-pi"), target: RUN_PI, readOnly: true },
    ...launchers.map(([name = "", target = ""]) => ({
      source: join(dir, "engine", name),
      target,
      readOnly: true,
    })),
  ];
}

/** The line said on every run while it is on: a development setting should not go unnoticed. */
export function engineDirWarning(dir: string): string {
  return `warning: [engine] dir is on: every box runs the extensions and run-pi of ${dir} (read-only), not the image's; remove it from org.toml outside development`;
}
