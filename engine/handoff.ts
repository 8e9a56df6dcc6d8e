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
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

/**
 * The code pi loads only on its first model call: the providers' request
 * code and the proxy agent (chunks of pi's bundle, named with a hash). A
 * ready box has time before its run: loading them while it waits takes their
 * cost off the run's first request. They are loaded by Node's own loader,
 * under the URLs pi's bundle asks for, so pi's later import finds them done.
 */
const FIRST_CALL_CHUNKS =
  /^(openai-completions|openai-responses|anthropic-messages|https-proxy-agent)-[A-Z0-9]+\.js$/;

/** `import()` as Node does it: jiti, which loads this file, would make its own copy. */
const nativeImport = new Function("url", "return import(url)") as (url: string) => Promise<unknown>;

function preloadFirstCall(): void {
  // run-pi starts `node <bundle>/cli.js`: the chunks are beside it
  const cli = process.argv[1];
  if (!cli) return;
  const chunks = join(dirname(cli), "chunks");
  let names: string[];
  try {
    names = readdirSync(chunks).filter((name) => FIRST_CALL_CHUNKS.test(name));
  } catch {
    return;
  }
  for (const name of names)
    nativeImport(pathToFileURL(join(chunks, name)).href).catch(() => undefined);
}

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
  // after pi's own start, while the box waits for its run
  if (file) setTimeout(preloadFirstCall, 0).unref();
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
