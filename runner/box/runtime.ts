import { RosterError } from "../errors.ts";
import type { BoxEngine } from "./engine.ts";

/**
 * Which OCI runtime a box runs under, and whether the engine has it. runc is
 * the engine's own default and always there; anything else (runsc, gVisor's
 * user-space kernel) must be registered with dockerd first. A box asked to run
 * under a runtime the engine does not list is refused before it is created:
 * falling back to runc would hand the box the host's kernel that org.toml
 * asked to keep from it.
 */

/** The engine's default runtime: a box spec without one gets it. */
export const DEFAULT_RUNTIME = "runc";

/**
 * The runsc flags the door needs. `--host-uds=open`: gVisor refuses connect()
 * on a host Unix socket otherwise (EPERM), and the door is one. `--network=none`:
 * a box has no network, and without the flag runsc refuses to start in the
 * root network namespace Docker's `--network none` leaves it.
 */
export const RUNSC_ARGS = ["--host-uds=open", "--network=none"] as const;

/**
 * Under runsc the container's pids cgroup holds gVisor's own host threads, not
 * the box's processes: ~40 for an idle sandbox, and 6 to 8 more for each
 * process in the box (Debian's runsc uses the ptrace platform: a host stub per
 * address space, threads for each task). A box given runc's number gets a
 * tenth of the processes, and at the limit the sandbox itself dies (it cannot
 * make a thread) before a fork in the box fails. So the cgroup's limit is
 * scaled to give the box about the processes `pids_limit` says, still bounded.
 */
const RUNSC_HOST_PIDS_PER_PROCESS = 8;
const RUNSC_SANDBOX_PIDS = 64;

/** The engine's pids limit for a box that may run `pids` processes under `runtime`. */
export function hostPidsLimit(runtime: string | undefined, pids: number): number {
  return runtime === "runsc" ? pids * RUNSC_HOST_PIDS_PER_PROCESS + RUNSC_SANDBOX_PIDS : pids;
}

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
