import { stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { BoxHandle, BoxWatch } from "../../boundary/box/lifecycle.ts";
import { answers, DOOR_SOCKET, runDoorDir } from "../../boundary/gateway/doors/door.ts";
import { bindToken } from "../../boundary/gateway/doors/identity.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage } from "../../ground/errors.ts";
import { readLive, scheduleView } from "../../records/task-list/store.ts";
import type { CompiledPrompt } from "../prompt/compile.ts";
import { BoxLines } from "./box-lines.ts";
import { LINE_MAX } from "./box-output.ts";
import type { EngineDrive } from "./engine-prompt.ts";
import { parseEvent } from "./pi-events.ts";
import { channelsOf } from "./run-context.ts";
import type { ReadyStart, RunRequest } from "./run-request.ts";

/**
 * The request as the owner runs it: with its ready box once that is claimed,
 * or without one (discarded, with a note saying why) to start the usual way.
 */
export async function takeOver(request: RunRequest): Promise<RunRequest> {
  const { ready, ...rest } = request;
  if (!ready) return request;
  const why =
    mismatch(request, ready) ?? (await claimReady(request.paths, ready, originsOf(request)));
  if (!why) return request;
  request.note(`ready box ${ready.id} not used (${why}): starting the run the usual way`);
  await ready.discard(why).catch(() => undefined);
  return rest;
}

/**
 * The channels this run's input comes from, as a box started for it would
 * have them in its token (run-context.ts): a ready box was made before
 * anyone knew whose task it would run, so its token learns them at hand-off.
 */
function originsOf(request: RunRequest): string[] {
  const engine = "engine" in request.drive ? request.drive.engine : undefined;
  return channelsOf(request.paths, {
    worker: request.worker,
    kind: request.kind,
    ...(engine?.session ? { channel_id: engine.session.channel } : {}),
    ...(engine?.taskId ? { task_id: engine.taskId } : {}),
  });
}

/** Why a ready box was made for something else than this request (never handed over), or undefined. */
function mismatch(request: RunRequest, ready: ReadyStart): string | undefined {
  const what = (exec: boolean, channel: string | undefined) =>
    exec ? "a command" : channel ? `channel ${channel}` : "a run";
  const exec = "command" in request.drive;
  const channel = "engine" in request.drive ? request.drive.engine.session?.channel : undefined;
  if (exec === (ready.exec ?? false) && channel === ready.channel) return undefined;
  return `made for ${what(ready.exec ?? false, ready.channel)}, not ${what(exec, channel)}`;
}

/**
 * A command in a ready box for `box exec`: its arguments, each ended by a
 * NUL, then the end of stdin, and box/roster-ready becomes the command.
 */
export function sendCommand(handle: BoxHandle, command: string[]): void {
  for (const arg of command) handle.stdin?.write(`${arg}\0`);
  handle.stdin?.end();
}

/**
 * The hand-off's first step, before any record exists: the token is bound
 * with the run's own origins and the run's door opened in the folder the box has mounted; then the box
 * must still run and the door answer in that very folder. Returns why the box
 * can't serve the run (the owner then discards it and starts the usual way:
 * a run never fails because the pool did), or undefined once it is this run's.
 */
export async function claimReady(
  paths: RosterPaths,
  ready: ReadyStart,
  origins: readonly string[],
): Promise<string | undefined> {
  if (ready.ended()) return "its box ended";
  try {
    await bindToken(paths.identity, ready.token, origins);
    const mounted = runDoorDir(ready.box.gateway.door, ready.id);
    const door = await ready.box.gateway.openDoor(ready.id);
    if (door !== mounted) return `the gateway opened its door at ${door}, not at ${mounted}`;
    const folder = await stat(door);
    if (folder.ino !== ready.doorIno) return "its door folder was made again: the box can't see it";
    if (!(await answers(`${door}/${DOOR_SOCKET}`))) return "its door does not answer";
    if (ready.ended()) return "its box ended";
    return undefined;
  } catch (error) {
    return errorMessage(error);
  }
}

/**
 * The box goes to the run: its output to the run's sinks, its limits armed,
 * and what it waits for sent — a task over pi's RPC, or a command to
 * roster-ready (a session sends its own turns).
 */
export async function handOver(
  paths: RosterPaths,
  ready: ReadyStart,
  run: {
    worker: string;
    drive: { prompt: CompiledPrompt; mode: EngineDrive["mode"] } | { command: string[] };
    env: Record<string, string>;
    watch: BoxWatch;
    onStdout: (chunk: Buffer) => void;
    onStderr: (chunk: Buffer) => void;
  },
): Promise<BoxHandle> {
  const { handle } = ready;
  if ("prompt" in run.drive)
    await writeHandoff(paths, ready, run.worker, run.drive.prompt, run.env);
  let tap: ((chunk: Buffer) => void) | undefined;
  ready.output.stdout = (chunk) => {
    tap?.(chunk);
    run.onStdout(chunk);
  };
  ready.output.stderr = run.onStderr;
  handle.arm(run.watch);
  if ("command" in run.drive) sendCommand(handle, run.drive.command);
  // json mode's one task, over the RPC pi was started in
  else if (run.drive.mode === "json") tap = oneTurnOverRpc(handle, run.drive.prompt.input);
  return handle;
}

/**
 * What the box's pi reads on its first agent start (engine/handoff.ts): the
 * run's part of the system prompt, as `--append-system-prompt` would carry it,
 * and its last variables. The task list is rewritten too: it was read when the
 * box was made, and a task's claim came after.
 */
export async function writeHandoff(
  paths: RosterPaths,
  ready: ReadyStart,
  worker: string,
  prompt: CompiledPrompt,
  env: Record<string, string>,
): Promise<void> {
  await writeFile(join(ready.dir, "self", "schedule.json"), scheduleView(readLive(paths, worker)));
  await writeFile(ready.handoffFile, `${JSON.stringify({ system: prompt.system, env })}\n`, {
    mode: 0o644,
  });
}

/**
 * One task over pi's RPC, the way `--mode json` runs one: the prompt is sent,
 * and stdin is closed once pi has settled (or refused the prompt), so pi exits
 * as it would have. Returns the tap the owner puts in front of the box's
 * stdout: the events themselves are the ones json mode prints.
 */
export function oneTurnOverRpc(handle: BoxHandle, input: string): (chunk: Buffer) => void {
  let ended = false;
  // the run owner reads the same bytes within the same bound, and stops the box past it
  const lines = new BoxLines(LINE_MAX, (line) => {
    if (ended) return;
    const event = parseEvent(line);
    const refused = event?.type === "response" && event.success === false;
    if (event?.type === "agent_settled" || refused) {
      ended = true;
      handle.stdin?.end();
    }
  });
  handle.stdin?.write(`${JSON.stringify({ type: "prompt", message: input })}\n`);
  return (chunk) => {
    if (!ended) lines.push(chunk);
  };
}
