import { join } from "node:path";
import type { BoxMount } from "./container-spec.ts";
import { ENGINE_DIR, RUN_PI } from "./layout.ts";

/**
 * The mounts of `[engine] dir` (for development): a checkout's extensions/ and
 * engine/run-pi, read-only, over the ones baked into the image, so an edited
 * tool runs in the next box without a build. pi and the extensions' runtime
 * dependencies stay the image's (a changed engine/package.json still needs
 * `roster box build`).
 */
export function engineDirMounts(dir: string): BoxMount[] {
  return [
    { source: join(dir, "extensions"), target: `${ENGINE_DIR}/extensions`, readOnly: true },
    { source: join(dir, "engine", "run-pi"), target: RUN_PI, readOnly: true },
  ];
}

/** The line said on every run while it is on: a development setting should not go unnoticed. */
export function engineDirWarning(dir: string): string {
  return `warning: [engine] dir is on: every box runs the extensions and run-pi of ${dir} (read-only), not the image's; remove it from org.toml outside development`;
}
