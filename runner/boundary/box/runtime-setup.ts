import { constants } from "node:fs";
import { access, mkdir, readFile } from "node:fs/promises";
import { delimiter, dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { errorMessage, RosterError } from "../../ground/errors.ts";
import { replaceFile } from "../../ground/files/atomic-replace.ts";
import type { BoxEngine } from "./engine.ts";
import { RUNSC_ARGS } from "./runtime.ts";
import { engineRuntime } from "./runtime-check.ts";

/**
 * `roster box doctor --fix`: the one-time set-up gVisor needs. dockerd learns
 * a runtime from the `runtimes` key of its config file and reloads that key
 * on SIGHUP, so the set-up is: merge runsc's entry (with the flags the door
 * needs) into the file, keeping every other key; reload; wait until the
 * engine lists it. A file that does not parse is refused, never overwritten:
 * it is the engine's, and what it meant can't be guessed.
 */

export const DAEMON_JSON = "/etc/docker/daemon.json";
export const DOCKER_PID_FILE = "/var/run/docker.pid";

interface RuntimeEntry {
  path: string;
  runtimeArgs?: string[];
}

export interface RunscSetup {
  /** The engine config file read (and written when `changed`). */
  file: string;
  changed: boolean;
  /** runsc's entry before (absent when there was none) and after. */
  before?: RuntimeEntry;
  after: RuntimeEntry;
  /** The pid SIGHUP went to, when the engine had to reload. */
  reloadedPid?: number;
}

export interface SetupOptions {
  daemonJson?: string;
  pidFile?: string;
  env?: NodeJS.ProcessEnv;
  /** How long to wait for the engine to list runsc after a reload. */
  waitMs?: number;
}

/** The first executable `runsc` on PATH. */
export async function findRunsc(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  for (const dir of (env.PATH ?? "").split(delimiter).filter(Boolean)) {
    const candidate = join(dir, "runsc");
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this folder
    }
  }
  return undefined;
}

/** The engine config as an object; {} when there is none; refused when it is not a JSON object. */
async function readDaemonJson(file: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw new RosterError(`cannot read ${file} (${errorMessage(error)}); nothing was changed`);
  }
  if (!text.trim()) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new RosterError(
      `${file} is not valid JSON (${errorMessage(error)}); nothing was changed: fix it by hand, then run \`roster box doctor --fix\` again`,
    );
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed))
    throw new RosterError(`${file} is not a JSON object; nothing was changed: fix it by hand`);
  return parsed as Record<string, unknown>;
}

/** The user's own runsc flags kept, ours added; a flag of ours given another value is replaced. */
function mergedArgs(existing: string[]): string[] {
  const ours = (flag: string) => flag.split("=")[0];
  const kept = existing.filter((arg) => !RUNSC_ARGS.some((flag) => ours(flag) === ours(arg)));
  return [...kept, ...RUNSC_ARGS];
}

function runtimeEntry(value: unknown): RuntimeEntry | undefined {
  if (!value || typeof value !== "object") return undefined;
  const { path, runtimeArgs } = value as { path?: unknown; runtimeArgs?: unknown };
  if (typeof path !== "string") return undefined;
  return {
    path,
    ...(Array.isArray(runtimeArgs)
      ? { runtimeArgs: runtimeArgs.filter((arg): arg is string => typeof arg === "string") }
      : {}),
  };
}

/** Registers runsc with the engine (idempotent): says what changed, or that nothing needed to. */
export async function setUpRunsc(
  engine: BoxEngine,
  options: SetupOptions = {},
): Promise<RunscSetup> {
  if (engine.kind !== "docker")
    throw new RosterError(
      `--fix registers runsc with dockerd; this engine is ${engine.kind} at ${engine.describe}, whose boxes all get the runtime its service was started with (\`podman --runtime runsc system service\`)`,
      { exitCode: 2 },
    );
  const file = options.daemonJson ?? DAEMON_JSON;
  const binary = await findRunsc(options.env);
  if (!binary)
    throw new RosterError(
      "runsc (gVisor) is not installed: `apt-get install runsc`, then run `roster box doctor --fix` again",
    );
  const config = await readDaemonJson(file);
  const runtimes = config.runtimes ?? {};
  if (typeof runtimes !== "object" || Array.isArray(runtimes))
    throw new RosterError(`${file}: "runtimes" is not a JSON object; nothing was changed`);
  const before = runtimeEntry((runtimes as Record<string, unknown>).runsc);
  const after: RuntimeEntry = {
    path: binary,
    runtimeArgs: mergedArgs(before?.runtimeArgs ?? []),
  };
  const changed = JSON.stringify(before) !== JSON.stringify(after);
  if (changed) {
    const next = { ...config, runtimes: { ...runtimes, runsc: after } };
    try {
      await mkdir(dirname(file), { recursive: true });
      await replaceFile(file, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o644 });
    } catch (error) {
      throw new RosterError(
        `cannot write ${file} (${errorMessage(error)}); nothing was changed: run \`roster box doctor --fix\` as root`,
      );
    }
  }
  const setup: RunscSetup = { file, changed, ...(before ? { before } : {}), after };
  // the file may have been right all along and the engine not yet reloaded
  if (!changed && listsAll(await engineRuntime(engine, "runsc"), after)) return setup;
  setup.reloadedPid = await reloadEngine(options.pidFile ?? DOCKER_PID_FILE);
  await waitForRunsc(engine, after, file, options.waitMs ?? 10_000);
  return setup;
}

function listsAll(found: Awaited<ReturnType<typeof engineRuntime>>, want: RuntimeEntry): boolean {
  return (
    found.registered &&
    found.missingArgs.length === 0 &&
    (want.runtimeArgs ?? []).every((arg) => found.runtimeArgs?.includes(arg))
  );
}

/** SIGHUP to dockerd: it rereads its config file and takes `runtimes` live, no restart. */
async function reloadEngine(pidFile: string): Promise<number> {
  let pid: number;
  try {
    pid = Number((await readFile(pidFile, "utf8")).trim());
  } catch (error) {
    throw new RosterError(
      `cannot read dockerd's pid from ${pidFile} (${errorMessage(error)}): reload the engine yourself (\`systemctl reload docker\` or SIGHUP to dockerd)`,
    );
  }
  if (!Number.isInteger(pid) || pid < 2)
    throw new RosterError(`${pidFile} holds no pid: reload the engine yourself`);
  try {
    process.kill(pid, "SIGHUP");
  } catch (error) {
    throw new RosterError(
      `cannot signal dockerd (pid ${pid}, from ${pidFile}): ${errorMessage(error)}; run as root`,
    );
  }
  return pid;
}

async function waitForRunsc(
  engine: BoxEngine,
  want: RuntimeEntry,
  file: string,
  waitMs: number,
): Promise<void> {
  const until = Date.now() + waitMs;
  for (;;) {
    if (listsAll(await engineRuntime(engine, "runsc"), want)) return;
    if (Date.now() > until)
      throw new RosterError(
        `the engine reloaded but does not list runsc after ${Math.round(waitMs / 1000)} s: is dockerd reading ${file} (its --config-file)? its log says why a reload was refused`,
      );
    await sleep(100);
  }
}

/** What `--fix` did, as lines for a person. */
export function formatSetup(setup: RunscSetup): string {
  const args = (entry: RuntimeEntry | undefined) => (entry?.runtimeArgs ?? []).join(" ");
  if (!setup.changed && setup.reloadedPid === undefined)
    return `fixed    nothing needed changing: runsc is registered (${setup.after.path} ${args(setup.after)})`;
  const lines: string[] = [];
  if (setup.changed)
    lines.push(
      setup.before
        ? `fixed    ${setup.file}: runsc was ${setup.before.path} ${args(setup.before)}, now ${setup.after.path} ${args(setup.after)}`
        : `fixed    ${setup.file}: added runsc (${setup.after.path} ${args(setup.after)})`,
    );
  if (setup.reloadedPid !== undefined)
    lines.push(`fixed    reloaded dockerd (SIGHUP to pid ${setup.reloadedPid}); it lists runsc`);
  return lines.join("\n");
}
