/**
 * A ready box's hand-off (docs/ready-boxes.md). A ready box starts pi before
 * its run is known, so what pi would have been told on its command line — the
 * run's part of the system prompt and the run's last environment variables —
 * arrives in a file the host writes at hand-off, before it sends the first
 * prompt. run-pi loads this only when ROSTER_HANDOFF names that file.
 *
 * It enforces nothing: the box's limits, its door and its token are the
 * host's. A box that finds no hand-off was handed nothing, and pi shuts down
 * rather than answer a prompt without the run's instructions.
 */
import { readFileSync } from "node:fs";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

interface Handoff {
  /** Appended to the system prompt pi built, as `--append-system-prompt` would. */
  system: string;
  /** Variables for everything pi starts from now on (ROSTER_TASK_ID, ROSTER_CEILING_MIN). */
  env: Record<string, string>;
}

function readHandoff(file: string): Handoff | undefined {
  try {
    const raw = JSON.parse(readFileSync(file, "utf8")) as Partial<Handoff>;
    if (typeof raw.system !== "string" || typeof raw.env !== "object" || raw.env === null)
      return undefined;
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries(raw.env))
      if (/^ROSTER_[A-Z_]+$/.test(name) && typeof value === "string") env[name] = value;
    return { system: raw.system, env };
  } catch {
    return undefined;
  }
}

export default function handoff(pi: ExtensionAPI): void {
  const file = process.env.ROSTER_HANDOFF;
  let handed: Handoff | undefined;
  pi.on("before_agent_start", (event, ctx) => {
    if (!file) return undefined;
    if (!handed) {
      handed = readHandoff(file);
      if (!handed) {
        console.error(`roster: no hand-off at ${file}: this box was handed no run`);
        ctx.shutdown();
        return undefined;
      }
      Object.assign(process.env, handed.env);
    }
    // every agent start builds its prompt anew: a session's later turns need it too
    return { systemPrompt: `${event.systemPrompt}\n\n${handed.system}` };
  });
}
