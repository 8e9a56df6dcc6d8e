import { RosterError } from "../../ground/errors.ts";
import type { BoxEngine } from "./engine.ts";
import { DEFAULT_RUNTIME, RUNSC_ARGS } from "./runtime.ts";

/**
 * Whether the engine has a box's runtime, with the flags the door needs: asked
 * before a box is created, so a box whose runtime is missing is refused and
 * never falls back to runc (runtime.ts says why).
 */

/** What the engine says about one runtime. */
export interface EngineRuntime {
  name: string;
  registered: boolean;
  path?: string;
  runtimeArgs?: string[];
  /** Flags roster needs that its entry lacks (runsc only). */
  missingArgs: string[];
}

/** The engine's answer about `name` (Docker: one `info()` call, ~40 ms). */
export async function engineRuntime(engine: BoxEngine, name: string): Promise<EngineRuntime> {
  const entry = (await engine.runtimes()).find((runtime) => runtime.name === name);
  if (!entry) return { name, registered: false, missingArgs: [] };
  const args = entry.runtimeArgs ?? [];
  return {
    name,
    registered: true,
    ...(entry.path ? { path: entry.path } : {}),
    runtimeArgs: args,
    missingArgs: name === "runsc" ? RUNSC_ARGS.filter((flag) => !args.includes(flag)) : [],
  };
}

/** How long a "yes, it is registered" is believed: long enough that a server's boxes skip the ~40 ms, short enough that a removal is seen. */
const BELIEVED_MS = 60_000;
const confirmed = new Map<string, number>();

/**
 * Refuses, with one line, a runtime the engine does not list (or lists
 * without the flags the door needs). Nothing is asked for runc. Only a yes is
 * remembered, so a fix is seen at once and a refusal is never stale.
 */
export async function requireRuntime(
  engine: BoxEngine,
  runtime: string | undefined,
): Promise<void> {
  if (runtime === undefined || runtime === DEFAULT_RUNTIME) return;
  const until = confirmed.get(runtime);
  if (until !== undefined && until > Date.now()) return;
  const found = await engineRuntime(engine, runtime);
  if (!found.registered)
    throw new RosterError(
      `the box runtime "${runtime}" ([box] runtime) is not registered with the container engine, so no box was started (roster never falls back to runc); \`roster box doctor --fix\` sets it up`,
      { exitCode: 2 },
    );
  if (found.missingArgs.length)
    throw new RosterError(
      `the box runtime "${runtime}" is registered without ${found.missingArgs.join(" and ")}, which the box's door needs, so no box was started; \`roster box doctor --fix\` adds them`,
      { exitCode: 2 },
    );
  confirmed.set(runtime, Date.now() + BELIEVED_MS);
}
