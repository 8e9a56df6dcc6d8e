import type { BoxMount } from "../../runner/boundary/box/container-spec.ts";
import type { BoxEngine } from "../../runner/boundary/box/engine.ts";
import { BOX_HOME, BOX_IMAGE, ENGINE_DIR, RUN_PI } from "../../runner/boundary/box/layout.ts";
import { runBox } from "../../runner/boundary/box/lifecycle.ts";

/** Runs a command in a hardened box (the runner's own container spec) and collects its output. */
export interface BoxRun {
  exitCode: number;
  stdout: string;
  stderr: string;
}

export interface BoxRunOptions {
  home: string;
  /** The gateway's door (a folder holding its socket): the box's only way out. */
  door?: string;
  extensionsDir?: string;
  mounts?: BoxMount[];
  env?: Record<string, string>;
  deadlineMs?: number;
}

export async function runInBox(
  engine: BoxEngine,
  cmd: string[],
  options: BoxRunOptions,
): Promise<BoxRun> {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const mounts: BoxMount[] = [{ source: options.home, target: BOX_HOME, readOnly: false }];
  if (options.extensionsDir) {
    mounts.push({
      source: options.extensionsDir,
      target: `${ENGINE_DIR}/extensions`,
      readOnly: true,
    });
  }
  mounts.push(...(options.mounts ?? []));
  const outcome = await runBox(
    engine,
    {
      image: BOX_IMAGE,
      cmd,
      ...(options.door ? { door: options.door } : {}),
      mounts,
      env: { ROSTER_STORE_DIR: `${BOX_HOME}/store`, ...options.env },
      workdir: `${BOX_HOME}/workspace`,
      labels: { "roster.test": "1" },
    },
    {
      onStdout: (chunk) => out.push(chunk),
      onStderr: (chunk) => err.push(chunk),
      deadlineMs: options.deadlineMs ?? 120_000,
    },
  );
  return {
    exitCode: outcome.exitCode,
    stdout: Buffer.concat(out).toString("utf8"),
    stderr: Buffer.concat(err).toString("utf8"),
  };
}

/** pi's `--mode json` output as parsed events (non-JSON lines are dropped). */
export function piEvents(stdout: string): Array<{ type: string; [key: string]: unknown }> {
  const events: Array<{ type: string; [key: string]: unknown }> = [];
  for (const line of stdout.split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      const parsed = JSON.parse(line) as { type?: unknown };
      if (typeof parsed.type === "string") {
        events.push(parsed as { type: string; [key: string]: unknown });
      }
    } catch {
      // a partial line is not an event
    }
  }
  return events;
}

export function runPiArgs(prompt: string, extra: string[] = []): string[] {
  return [RUN_PI, "--mode", "json", "--session-dir", `${BOX_HOME}/session`, ...extra, prompt];
}
